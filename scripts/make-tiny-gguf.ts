/**
 * Writes a tiny llama-architecture GGUF v3 model with random F32 weights: the test fixture of the
 * gateway plugin. node-llama-cpp loads it in milliseconds and generates real (meaningless) text,
 * so tests exercise the real engine without downloading a model.
 *
 * Usage: `node --import tsx scripts/make-tiny-gguf.ts [out.gguf]` (default `data/models/tiny.gguf`).
 *
 * Format (GGUF v3, little endian): header, metadata key/values, tensor infos (dims innermost
 * first, data offsets aligned to 32), padding to 32, tensor data.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** Knobs of the fixture model; all sizes in elements. */
export interface TinyGgufOptions {
  readonly embd?: number
  readonly layers?: number
  readonly heads?: number
  readonly ff?: number
  readonly contextLength?: number
  /** PRNG seed: the same seed writes the same bytes. */
  readonly seed?: number
}

/** A ChatML-style template, stored in `tokenizer.chat_template` so the engine formats with it. */
export const TINY_CHAT_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

// GGUF metadata value types.
const T_U32 = 4, T_I32 = 5, T_F32 = 6, T_BOOL = 7, T_STRING = 8, T_ARRAY = 9
type Meta = [key: string, type: number, value: unknown, itemType?: number]

/** Growable little-endian byte buffer. */
class Out {
  private buf = Buffer.alloc(1 << 16)
  len = 0
  private room(n: number) {
    if (this.len + n <= this.buf.length) return
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.len + n))
    this.buf.copy(next, 0, 0, this.len)
    this.buf = next
  }
  u32(v: number) { this.room(4); this.buf.writeUInt32LE(v, this.len); this.len += 4 }
  i32(v: number) { this.room(4); this.buf.writeInt32LE(v, this.len); this.len += 4 }
  u64(v: number) { this.room(8); this.buf.writeBigUInt64LE(BigInt(v), this.len); this.len += 8 }
  f32(v: number) { this.room(4); this.buf.writeFloatLE(v, this.len); this.len += 4 }
  u8(v: number) { this.room(1); this.buf.writeUInt8(v, this.len); this.len += 1 }
  str(s: string) { const b = Buffer.from(s, "utf8"); this.u64(b.length); this.room(b.length); b.copy(this.buf, this.len); this.len += b.length }
  pad(align: number) { while (this.len % align !== 0) this.u8(0) }
  value(type: number, v: unknown, itemType?: number) {
    switch (type) {
      case T_U32: return this.u32(v as number)
      case T_I32: return this.i32(v as number)
      case T_F32: return this.f32(v as number)
      case T_BOOL: return this.u8(v ? 1 : 0)
      case T_STRING: return this.str(v as string)
      case T_ARRAY: {
        const items = v as ReadonlyArray<unknown>
        this.u32(itemType!); this.u64(items.length)
        for (const item of items) this.value(itemType!, item)
        return
      }
    }
    throw new Error(`unsupported GGUF type ${type}`)
  }
  bytes(): Buffer { return this.buf.subarray(0, this.len) }
}

/** SentencePiece-style vocabulary: specials, ChatML markers, all 256 byte tokens, printable ASCII. */
const vocabulary = () => {
  const tokens: string[] = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
  // token_type: 1 normal, 2 unknown, 3 control, 6 byte.
  const types: number[] = [2, 3, 3, 3, 3]
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`)
    types.push(6)
  }
  // SentencePiece writes spaces as U+2581; single characters plus a few words give the
  // tokenizer merges to find, the byte tokens cover everything else.
  const pieces = ["\u2581"]
  for (let c = 33; c < 127; c++) pieces.push(String.fromCharCode(c))
  for (const w of ["the", "and", "hello", "world", "model", "token", "json", "yes", "no"]) pieces.push(w, `\u2581${w}`)
  for (const p of pieces) { tokens.push(p); types.push(1) }
  const scores = tokens.map((t, i) => (types[i] === 1 ? -i / 100 - (t.length === 1 ? 1 : 0) : 0))
  return { tokens, types, scores }
}

/**
 * Writes the model to `file` (parent directories created) and returns its size in bytes.
 * Throws on I/O errors.
 */
export function writeTinyGguf(file: string, opts: TinyGgufOptions = {}): number {
  const embd = opts.embd ?? 64, layers = opts.layers ?? 2, heads = opts.heads ?? 4, ff = opts.ff ?? 128
  const ctx = opts.contextLength ?? 2048
  const { tokens, types, scores } = vocabulary()
  const nVocab = tokens.length
  let state = (opts.seed ?? 42) >>> 0
  // xorshift32: deterministic without dependencies; small weights keep activations tame.
  const rand = () => { state ^= state << 13; state >>>= 0; state ^= state >>> 17; state ^= state << 5; state >>>= 0; return state / 0x1_0000_0000 - 0.5 }

  const tensors: Array<{ name: string; dims: number[]; fill: "rand" | "ones" }> = [
    { name: "token_embd.weight", dims: [embd, nVocab], fill: "rand" },
    { name: "output_norm.weight", dims: [embd], fill: "ones" },
    { name: "output.weight", dims: [embd, nVocab], fill: "rand" }
  ]
  for (let l = 0; l < layers; l++) {
    tensors.push(
      { name: `blk.${l}.attn_norm.weight`, dims: [embd], fill: "ones" },
      { name: `blk.${l}.attn_q.weight`, dims: [embd, embd], fill: "rand" },
      { name: `blk.${l}.attn_k.weight`, dims: [embd, embd], fill: "rand" },
      { name: `blk.${l}.attn_v.weight`, dims: [embd, embd], fill: "rand" },
      { name: `blk.${l}.attn_output.weight`, dims: [embd, embd], fill: "rand" },
      { name: `blk.${l}.ffn_norm.weight`, dims: [embd], fill: "ones" },
      { name: `blk.${l}.ffn_gate.weight`, dims: [embd, ff], fill: "rand" },
      { name: `blk.${l}.ffn_down.weight`, dims: [ff, embd], fill: "rand" },
      { name: `blk.${l}.ffn_up.weight`, dims: [embd, ff], fill: "rand" }
    )
  }

  const meta: Meta[] = [
    ["general.architecture", T_STRING, "llama"],
    ["general.name", T_STRING, "tiny-llama-fixture"],
    ["general.alignment", T_U32, 32],
    ["llama.context_length", T_U32, ctx],
    ["llama.embedding_length", T_U32, embd],
    ["llama.block_count", T_U32, layers],
    ["llama.feed_forward_length", T_U32, ff],
    ["llama.attention.head_count", T_U32, heads],
    ["llama.attention.head_count_kv", T_U32, heads],
    ["llama.attention.layer_norm_rms_epsilon", T_F32, 1e-5],
    ["llama.rope.dimension_count", T_U32, embd / heads],
    ["llama.vocab_size", T_U32, nVocab],
    ["tokenizer.ggml.model", T_STRING, "llama"],
    ["tokenizer.ggml.tokens", T_ARRAY, tokens, T_STRING],
    ["tokenizer.ggml.scores", T_ARRAY, scores, T_F32],
    ["tokenizer.ggml.token_type", T_ARRAY, types, T_I32],
    ["tokenizer.ggml.unknown_token_id", T_U32, 0],
    ["tokenizer.ggml.bos_token_id", T_U32, 1],
    ["tokenizer.ggml.eos_token_id", T_U32, 4],
    ["tokenizer.ggml.add_bos_token", T_BOOL, true],
    ["tokenizer.ggml.add_eos_token", T_BOOL, false],
    ["tokenizer.chat_template", T_STRING, TINY_CHAT_TEMPLATE]
  ]

  const out = new Out()
  out.u32(0x46554747) // "GGUF"
  out.u32(3)
  out.u64(tensors.length)
  out.u64(meta.length)
  for (const [key, type, value, itemType] of meta) { out.str(key); out.u32(type); out.value(type, value, itemType) }
  let offset = 0
  for (const t of tensors) {
    out.str(t.name); out.u32(t.dims.length)
    for (const d of t.dims) out.u64(d)
    out.u32(0) // GGML_TYPE_F32
    out.u64(offset)
    offset += t.dims.reduce((a, b) => a * b, 1) * 4
    offset = Math.ceil(offset / 32) * 32
  }
  out.pad(32)
  const dataStart = out.len
  for (const t of tensors) {
    const n = t.dims.reduce((a, b) => a * b, 1)
    for (let i = 0; i < n; i++) out.f32(t.fill === "ones" ? 1 : rand() * 0.5)
    while ((out.len - dataStart) % 32 !== 0) out.u8(0)
  }
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
  fs.writeFileSync(file, out.bytes())
  return out.len
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = process.argv[2] ?? "data/models/tiny.gguf"
  const size = writeTinyGguf(file)
  console.log(`wrote ${file} (${size} bytes)`)
}
