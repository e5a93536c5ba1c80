/**
 * The memo side of a chip: how states that recur are carried forward instead of re-simulated
 * (the middle layer of Chip, between ChipSettle.ts's settle and Chip.ts's public interface).
 *
 * Single settles (halfStep) and spans of 32 half-cycles with their bus traffic (runHalfCycles)
 * are recorded into memos (Memo.ts) keyed by the complete state, which is the packed node levels
 * and the driven pins' pulls while the state is consistent with standard pulls (memoUsable);
 * a record is replayed only after its key has been compared word for word with the present
 * state, so the memo only changes how fast a state that recurs is carried forward: tests compare
 * results with the memo on and off over millions of half-cycles of Klaus Dormann's functional
 * test. The memo judges whether it pays and switches itself off for a while where it does not.
 */
import { makeKey, MemoTable, SettleMemo, SPAN_EVENT, type SpanRecord } from "./Memo.ts"
import { DRV_PULLDOWN, DRV_PULLUP, type ChipTables } from "./Tables.ts"
import { ChipSettle } from "./ChipSettle.ts"

/**
 * Bound of the half-cycle memo: recorded settles per generation (two generations are kept,
 * a few hundred bytes a record; see SettleMemo).
 */
export const MEMO_ENTRIES_MAX = 8192
/**
 * The memo judges itself over windows of this many settles: unless half of them were
 * replayed, it switches off, fingerprints included, for a back-off that doubles from 16384
 * settles up to 2^21 each time a trial window fails, so a run that never repeats pays little.
 * A trial records every settle; with the records stored flat (SettleMemo) that costs little
 * over a plain settle (functional test, first 2M half-cycles per CPU-second: 93,000 recording
 * everything against 96,600 with the memo off; 65,200 when each record was its own objects),
 * the rest being the kernel's notes. The price of the back-off: a run that turns repetitive
 * after a long stretch that was not waits up to 2^21 settles (about 1.4M half-cycles) for its
 * next trial.
 */
const MEMO_WINDOW = 16384
const MEMO_BACKOFF_MIN = 16384
const MEMO_BACKOFF_MAX = 1 << 21

/**
 * Span of a macro, in half-cycles: a run of half-cycles from a recurring state, stored as its
 * bus traffic (reads to check, writes to redo, opcode fetches) and its net node flips; replayed
 * whole when every read finds the same byte. Macros per generation (two kept) are bounded too.
 */
export const MACRO_HALF_CYCLES = 32
export const MACRO_ENTRIES_MAX = 4096

/** How a chip uses the memo (see the Chip constructor). */
export interface ChipMemoOptions {
  readonly memo?: boolean | "always"
}

/**
 * A chip's settles and half-cycles driven through the memo. Abstract: Chip (Chip.ts) is the one
 * class built, so every chip has one object shape.
 *
 * States that recur are carried forward from memos (Memo.ts) keyed by the complete state:
 * single settles (halfStep) and spans of 32 half-cycles (runHalfCycles). A record is replayed
 * only after its key has been compared word for word with the present state.
 */
export abstract class ChipMemo extends ChipSettle {
  /**
   * Every node outside ChipTables.drivenNodes has the pull-up `segdefs.js` gives it and no
   * pull-down (true of every state the engine makes; a loaded state may differ). With
   * `consistent`, the memo's key (packed levels, driven pins' pulls) is then the whole state.
   */
  private pullsStandard = true
  /** Pulls of the driven pins, bits 2i (pull-up) and 2i+1 (pull-down) for slot i. */
  private pinPulls = 0
  /** Packed node levels (a view of the kernel's vbits), kept while the memo is on. */
  private readonly levels: Uint32Array
  /** Recorded settles (see halfStep) and spans (see runHalfCycles); see Memo.ts. */
  private readonly settles: SettleMemo
  private readonly spans = new MemoTable<SpanRecord>(MACRO_ENTRIES_MAX)
  private recStamp: Int32Array
  /** Nodes changed by the settle being recorded (each once, by recStamp) and their level before. */
  private recNodes: Int32Array
  private recNodeWas: Uint8Array
  /** Settles replayed and simulated through the memo since construction (bench, tests). */
  memoHits = 0
  memoMisses = 0
  /** Half-cycles carried by span replays since construction (bench, tests). */
  macroHalfCycles = 0
  /** The span being recorded: its hash and key, length so far, bus events and nodes changed. */
  private macroHash = 0
  private macroKey: Uint32Array | undefined
  private macroLen = 0
  /** Bus events of the span being recorded (triples, see SpanRecord.events). */
  private macroEvents: Int32Array
  private macroEventCount = 0
  private macroNodes: Int32Array
  /** Memory bytes overwritten by a span replay, to undo when a later read does not match. */
  private undoAddr: Int32Array
  private undoByte: Uint8Array
  private macroStamp: Int32Array
  private macroOrig: Uint8Array
  private readonly memoEnabled: boolean
  /** Whether the memo judges itself and switches off where it does not pay (see MEMO_WINDOW). */
  private readonly memoAdaptive: boolean
  private memoWindow = 0
  private memoWindowHits = 0
  private memoCooldown = 0
  private memoBackoff = MEMO_BACKOFF_MIN

  constructor(tables: ChipTables, options: ChipMemoOptions) {
    super(tables)
    this.memoEnabled = options.memo !== false
    this.memoAdaptive = options.memo !== "always"
    this.memoActive = this.memoEnabled
    const nn = tables.nodeCount
    // The recorders and packed levels the kernel notes into live in its memory (shared views).
    const L = this.kernel.layout
    const buf = this.kernel.memory.buffer
    this.levels = new Uint32Array(buf, L.vbits, (nn + 31) >> 5)
    this.settles = new SettleMemo(this.levels.length, nn, MEMO_ENTRIES_MAX)
    this.recStamp = new Int32Array(buf, L.recStamp, nn)
    this.macroStamp = new Int32Array(buf, L.macroStamp, nn)
    this.macroOrig = new Uint8Array(buf, L.macroOrig, nn)
    this.recNodes = new Int32Array(buf, L.recNodes, nn)
    this.recNodeWas = new Uint8Array(buf, L.recNodeWas, nn)
    this.macroNodes = new Int32Array(buf, L.macroNodes, nn)
    // a half-cycle has at most a read or a write, and a fetch row
    this.macroEvents = new Int32Array(3 * 2 * MACRO_HALF_CYCLES)
    this.undoAddr = new Int32Array(MACRO_HALF_CYCLES)
    this.undoByte = new Uint8Array(MACRO_HALF_CYCLES)
  }

  /** Empties the half-cycle memo and switches it on (tests, benchmarks); results are unaffected. */
  memoReset(): void {
    this.settles.clear()
    this.spans.clear()
    this.macroRec = false
    this.memoActive = this.memoEnabled && this.memoUsable()
    this.memoBackoff = MEMO_BACKOFF_MIN
    this.memoWindow = 0
    this.memoWindowHits = 0
    this.fingerprint()
  }

  /** Whether the memo's key is the whole state (see pullsStandard); decided on load. */
  private memoUsable(): boolean {
    return this.consistent && this.pullsStandard
  }

  /** Rebuilds the caches and the fingerprint from the state; clears the generation stamps. */
  protected resetScratch(): void {
    this.resetSettleCaches()
    this.resetMemoCaches()
    if (!this.memoUsable()) this.memoActive = false
    else if (this.memoEnabled && this.memoCooldown <= 0) this.memoActive = true
    this.fingerprint()
  }

  /** Recomputes the fingerprint and the packed levels from the state. */
  private fingerprint(): void {
    const t = this.tables
    let h1 = 0
    const fold = (z: Int32Array, bits: Uint8Array) => {
      for (let i = 0; i < bits.length; i++) {
        if (!bits[i]) continue
        h1 ^= z[i]!
      }
    }
    fold(t.zValue, this.value)
    fold(t.zPullup, this.pullup)
    fold(t.zPulldown, this.pulldown)
    fold(t.zTrans, this.transOn)
    this.h1 = h1
    const levels = this.levels
    levels.fill(0)
    for (let n = 0; n < t.nodeCount; n++) if (this.value[n]) levels[n >> 5]! |= 1 << (n & 31)
  }

  /** Decides whether the pulls are standard and packs the driven pins'; clears the recorders' stamps. */
  private resetMemoCaches(): void {
    const t = this.tables
    this.macroRec = false
    this.pullsStandard = true
    this.pinPulls = 0
    const standardUp = t.netlist.pullup
    for (let n = 0; n < t.nodeCount; n++) {
      const slot = t.drivenSlot[n]!
      if (slot >= 0) this.pinPulls |= (this.pullup[n]! << (2 * slot)) | (this.pulldown[n]! << (2 * slot + 1))
      else if (this.pullup[n] !== standardUp[n] || this.pulldown[n] !== 0) this.pullsStandard = false
    }
    this.recStamp.fill(0)
    this.recGen = 0
    this.macroStamp.fill(0)
    this.macroGen = 0
  }

  /** Sets a node's pulls for `level`, keeping the fingerprint while the memo is on. */
  protected drive(node: number, level: number): void {
    const t = this.tables
    const up = level ? 1 : 0
    const down = up ^ 1
    const slot = t.drivenSlot[node]!
    if (slot < 0 && (this.pullup[node] !== up || this.pulldown[node] !== down)) {
      // a node outside the driven pins: the memo's key would no longer be the whole state
      this.pullsStandard = false
      this.memoActive = false
      this.macroRec = false
    }
    if (this.pullup[node] !== up) {
      this.pullup[node] = up
      this.ns[2 * node + 1]! ^= DRV_PULLUP
      if (slot >= 0) this.pinPulls ^= 1 << (2 * slot)
      if (this.memoActive) {
        this.h1 ^= t.zPullup[node]!
      }
    }
    if (this.pulldown[node] !== down) {
      this.pulldown[node] = down
      this.ns[2 * node + 1]! ^= DRV_PULLDOWN
      if (slot >= 0) this.pinPulls ^= 1 << (2 * slot + 1)
      if (this.memoActive) {
        this.h1 ^= t.zPulldown[node]!
      }
    }
  }

  /**
   * One half-cycle with bus service, per shared/chip-sim/README.md: invert `clk0` and settle;
   * on a rising edge, a read (`rw` high) drives `db0..db7` from `memory[addr]` and settles, a
   * write stores the data bus into `memory[addr]`.
   *
   * Both settles go through the memo: a settle is a function of the whole state after the
   * drive and of the node it starts from, so when that state recurs (a program idling in a
   * loop) the recorded net node flips are replayed instead of re-simulated, once the record's
   * key has been found equal to the state. The memo switches itself off on runs that do not
   * repeat.
   */
  halfStep(memory: Uint8Array): void {
    const p = this.tables.pins
    const wasHigh = this.value[p.clk0]!
    this.memoSettle(p.clk0, wasHigh ? 0 : 1, -1)
    if (wasHigh) return
    const addr = this.readBits(p.ab)
    if (this.value[p.rw]) {
      const byte = memory[addr]!
      if (this.macroRec) this.macroEvent(0, addr, byte)
      this.memoSettle(-1, 0, byte)
    } else {
      const byte = this.readBits(p.db)
      if (this.macroRec) this.macroEvent(1, addr, byte)
      memory[addr] = byte
    }
  }

  /**
   * Runs up to `n` half-cycles (as many {@link halfStep}s), stopping early after the first
   * opcode-fetch row (`sync` high, `clk0` low) at address `stopPc` when one is given (>= 0).
   * Returns the half-cycles run, whether it stopped at `stopPc`, and the last fetch row met as
   * `{addr, opcode = memory[addr]}` (or null).
   *
   * Where a state recurs, whole spans of MACRO_HALF_CYCLES half-cycles are replayed: a span
   * recorded from the same state (key compared in full) applies when each of its reads finds in
   * memory the byte it found when recorded (its writes are redone in order first, so reads of
   * bytes it wrote itself check too) and it holds no fetch at `stopPc`; otherwise the memory is
   * restored and the half-cycles are simulated. Same end state, memory and fetch as stepping
   * one by one.
   */
  runHalfCycles(
    memory: Uint8Array,
    n: number,
    stopPc = -1
  ): { done: number; stopped: boolean; last: { addr: number; opcode: number } | null } {
    const p = this.tables.pins
    let last: { addr: number; opcode: number } | null = null
    let done = 0
    let stopped = false
    while (done < n) {
      if (!this.macroRec && this.memoActive && n - done >= MACRO_HALF_CYCLES) {
        const hash = (this.h1 ^ 0x5bd1e995) & 0x3fffffff
        const m = this.spans.find(hash, this.levels, this.pinPulls, SPAN_EVENT)
        if (m !== undefined) {
          const fetch = this.applyMacro(memory, m, stopPc)
          if (fetch !== undefined) {
            if (fetch !== null) last = fetch
            done += MACRO_HALF_CYCLES
            continue
          }
        } else if (!this.spans.has(hash)) this.startMacro(hash)
      }
      this.halfStep(memory)
      done++
      if (this.value[p.sync] && !this.value[p.clk0]) {
        const addr = this.readBits(p.ab)
        last = { addr, opcode: memory[addr]! }
        if (this.macroRec) this.macroEvent(2, addr, 0)
        if (addr === stopPc) {
          stopped = true
          break
        }
      }
      if (this.macroRec && ++this.macroLen === MACRO_HALF_CYCLES) this.finishMacro()
    }
    // A span cut short by the end of the run is dropped.
    this.macroRec = false
    return { done, stopped, last }
  }

  private startMacro(hash: number): void {
    this.macroRec = true
    this.macroHash = hash
    this.macroKey = makeKey(this.levels, this.pinPulls, SPAN_EVENT)
    this.macroLen = 0
    this.macroEventCount = 0
    this.macroNodeCount = 0
    if (++this.macroGen > 0x3fffffff) {
      this.macroStamp.fill(0)
      this.macroGen = 1
    }
  }

  private finishMacro(): void {
    this.macroRec = false
    // The fingerprint and levels must have been kept throughout (the memo stayed on).
    if (!this.memoActive || this.macroKey === undefined) return
    this.spans.set(this.macroHash, {
      key: this.macroKey,
      events: this.macroEvents.slice(0, this.macroEventCount),
      nodes: this.netFlips(this.macroNodes, this.macroNodeCount, this.macroOrig),
      pulls: this.pinPulls,
      h1: this.h1
    })
  }

  /** Appends a bus event to the span being recorded. */
  private macroEvent(kind: number, addr: number, byte: number): void {
    const ev = this.macroEvents
    const k = this.macroEventCount
    if (k + 3 > ev.length) {
      this.macroRec = false // cannot happen within a span's half-cycles; dropped if it did
      return
    }
    ev[k] = kind
    ev[k + 1] = addr
    ev[k + 2] = byte
    this.macroEventCount = k + 3
  }

  /**
   * The nodes among the first `count` of `nodes` whose level now differs from `was[node]`, as a
   * new array (a span's net flips; a settle's are written straight into its SettleMemo record).
   */
  private netFlips(nodes: Int32Array, count: number, was: Uint8Array): Uint16Array {
    const value = this.value
    let flipped = 0
    for (let i = 0; i < count; i++) {
      const n = nodes[i]!
      if (value[n] !== was[n]) flipped++
    }
    const out = new Uint16Array(flipped)
    let k = 0
    for (let i = 0; i < count; i++) {
      const n = nodes[i]!
      if (value[n] !== was[n]) out[k++] = n
    }
    return out
  }

  /**
   * Replays a span if its reads hold and it fetches nothing at `stopPc`: returns the last fetch
   * row in it (or null), or undefined with memory untouched otherwise.
   */
  private applyMacro(memory: Uint8Array, m: SpanRecord, stopPc: number): { addr: number; opcode: number } | null | undefined {
    const ev = m.events
    const undoAddr = this.undoAddr
    const undoByte = this.undoByte
    let undo = 0
    let lastAddr = -1
    let lastOpcode = 0
    for (let i = 0; i < ev.length; i += 3) {
      const kind = ev[i]!
      const addr = ev[i + 1]!
      if (kind === 0) {
        if (memory[addr] !== ev[i + 2]) {
          for (let k = undo - 1; k >= 0; k--) memory[undoAddr[k]!] = undoByte[k]!
          return undefined
        }
      } else if (kind === 1) {
        undoAddr[undo] = addr
        undoByte[undo++] = memory[addr]!
        memory[addr] = ev[i + 2]!
      } else {
        if (addr === stopPc) {
          for (let k = undo - 1; k >= 0; k--) memory[undoAddr[k]!] = undoByte[k]!
          return undefined
        }
        lastAddr = addr
        lastOpcode = memory[addr]!
      }
    }
    const last = lastAddr < 0 ? null : { addr: lastAddr, opcode: lastOpcode }
    this.toggleAll(m.nodes)
    this.setPinPulls(m.pulls)
    this.h1 = m.h1
    this.macroHalfCycles += MACRO_HALF_CYCLES
    return last
  }

  /** Sets the driven pins' pulls (and their drive words) from a packed word (see pinPulls). */
  private setPinPulls(pulls: number): void {
    const nodes = this.tables.drivenNodes
    for (let slot = 0; slot < nodes.length; slot++) {
      const node = nodes[slot]!
      const up = (pulls >>> (2 * slot)) & 1
      const down = (pulls >>> (2 * slot + 1)) & 1
      this.pullup[node] = up
      this.pulldown[node] = down
      this.ns[2 * node + 1] = (this.ns[2 * node + 1]! & ~(DRV_PULLUP | DRV_PULLDOWN)) | (up ? DRV_PULLUP : 0) | (down ? DRV_PULLDOWN : 0)
    }
    this.pinPulls = pulls
  }

  /**
   * Drives `pin` to `level` (pin >= 0), or the data bus with `byte`, and settles, via the memo:
   * the settle's key is the state after the drive and the event (0: from the data bus, pin + 1:
   * from that pin).
   */
  private memoSettle(pin: number, level: number, byte: number): void {
    if (pin >= 0) this.drive(pin, level)
    else {
      const db = this.tables.pins.db
      for (let i = 0; i < 8; i++) this.drive(db[i]!, (byte >> i) & 1)
    }
    if (!this.memoActive) {
      if (this.memoEnabled && --this.memoCooldown <= 0 && this.memoUsable()) {
        this.memoActive = true
        this.fingerprint()
        this.memoWindow = 0
        this.memoWindowHits = 0
      }
      this.settleFrom(pin)
      return
    }
    if (this.memoAdaptive && ++this.memoWindow >= MEMO_WINDOW) {
      const poor = this.memoWindowHits * 2 < this.memoWindow
      this.memoWindow = 0
      this.memoWindowHits = 0
      if (poor) {
        // Off from here: the fingerprint is no longer kept, so nothing below may be recorded.
        this.memoActive = false
        this.macroRec = false
        this.memoCooldown = this.memoBackoff
        this.memoBackoff = Math.min(this.memoBackoff * 2, MEMO_BACKOFF_MAX)
        this.settleFrom(pin)
        return
      }
      this.memoBackoff = MEMO_BACKOFF_MIN
    }
    const event = pin + 1
    // A small-integer map key (30 bits); the record's full key decides.
    const hash = (this.h1 ^ Math.imul(event + 1, 0x9e3779b1)) & 0x3fffffff
    const memo = this.settles
    const hit = memo.find(hash, this.levels, this.pinPulls, event)
    if (hit >= 0) {
      this.memoHits++
      this.memoWindowHits++
      const arena = memo.foundArena
      this.toggleFrom(arena, memo.flipsAt(hit), SettleMemo.flipCount(arena, hit))
      this.h1 = SettleMemo.h1(arena, hit)
      return
    }
    this.memoMisses++
    // Recorded at first sight: a loop then replays from its second turn.
    const at = memo.begin(this.levels, this.pinPulls, event)
    this.startRecording()
    this.settleFrom(pin)
    this.recording = false
    // The net flips, in the order first changed, straight into the record.
    const arena = memo.arena()
    const value = this.value
    const nodes = this.recNodes
    const was = this.recNodeWas
    let w = memo.flipsAt(at)
    const first = w
    for (let i = 0; i < this.recCount; i++) {
      const n = nodes[i]!
      if (value[n] !== was[i]) arena[w++] = n
    }
    memo.commit(hash, at, w - first, this.h1)
  }

  /** Settles from `pin` (>= 0) or from the data bus (already driven). */
  private settleFrom(pin: number): void {
    if (pin >= 0) {
      this.listA[0] = pin
      this.settle(1)
      return
    }
    const db = this.tables.pins.db
    for (let i = 0; i < 8; i++) this.listA[i] = db[i]!
    this.settle(8)
  }

  private startRecording(): void {
    this.recording = true
    if (++this.recGen > 0x3fffffff) {
      this.recStamp.fill(0)
      this.recGen = 1
    }
    this.recCount = 0
  }

  /**
   * Flips every node of `nodes` (distinct) and switches every transistor each gates, updating the
   * node words and packed levels in the kernel from the static effect lists (valid while the
   * state is consistent, which the memo requires): the net flips of a recorded settle or span.
   */
  private toggleAll(nodes: Uint16Array): void {
    this.noteMacroNodes(nodes, 0, nodes.length)
    this.transStale = true
    this.scratch.set(nodes)
    this.kernel.toggle(this.kernel.layout.scratch, nodes.length)
  }

  /** toggleAll of the `count` node ids from `arena[from]` (a SettleMemo record's flips). */
  private toggleFrom(arena: Int32Array, from: number, count: number): void {
    this.noteMacroNodes(arena, from, count)
    this.transStale = true
    // one copy in native code (same element type) into the kernel's scratch
    this.scratch.set(arena.subarray(from, from + count))
    this.kernel.toggle(this.kernel.layout.scratch, count)
  }

  /** Adds the nodes about to flip to the span being recorded, each with its level before. */
  private noteMacroNodes(nodes: ArrayLike<number>, from: number, count: number): void {
    if (!this.macroRec) return
    const value = this.value
    for (let i = from; i < from + count; i++) {
      const n = nodes[i]!
      if (this.macroStamp[n] === this.macroGen) continue
      this.macroStamp[n] = this.macroGen
      this.macroOrig[n] = value[n]!
      this.macroNodes[this.macroNodeCount++] = n
    }
  }
}
