/**
 * The `Workspaces` service: workspaces kept in the jobs file store (research-jobs spec,
 * "Workspace") with the spec's layout under `workspaces/{workspace_id}/`:
 * `manifest.json`; per run `runs/{run_id}/manifest.json`, `result.json`, `report.md`,
 * `artifacts/screenshots/`, `artifacts/data/`; `outputs/` (the aggregated `summary.md`); and,
 * while archived, `archive/runs.tar.gz`.
 *
 * Why concurrent runs never lose a run or corrupt counts, on both job backends: a run writes only
 * under its own `runs/{run_id}/`; everything that reads and rewrites shared objects (the
 * manifest, `outputs/`) runs holding the workspace's lock from the jobs plugin's shared storage,
 * which excludes every process and thread running jobs (a Redis lock on the redis backend, an
 * in-process lock on embedded, where all workers live in the serving process); and the counts are
 * not incremented but recounted from the stored objects while the lock is held, so even a run
 * filed by a crashed holder is counted by the next writer.
 */
import { randomBytes } from "node:crypto"
import * as fsp from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as tar from "tar"
import type { GraphLimits, GraphOpContext, GraphOperation } from "../../core/Contribution.ts"
import type { Doc } from "../../core/GraphTypes.ts"
import type { Registry } from "../../core/Registry.ts"
import type { GraphRun, GraphRunObserver, GraphRunOutcome } from "../job-graph/Contract.ts"
import { indexDocs, searchStore } from "../job-vectl/Contract.ts"
import { JobFailure, type JobsStorage } from "../jobs/Contract.ts"
import {
  type ArtifactRecord,
  type ArtifactType,
  type CreateWorkspace,
  type PatchWorkspace,
  RUN_ID,
  RunManifest,
  RunNotFound,
  WORKSPACE_ID,
  type WorkspaceError,
  WorkspaceManifest,
  WorkspaceNameTaken,
  WorkspaceNotFound,
  WorkspaceStateConflict,
  WorkspaceStorageError
} from "./Api.ts"
import { extractPdfText } from "./Pdf.ts"
import { runReport, summaryReport } from "./Report.ts"

/** What the service needs: the jobs plugin's shared storage and the graph operations (vectl). */
export interface WorkspacesDeps {
  readonly storage: JobsStorage
  readonly ops: Registry<GraphOperation>
  /** Limits of the indexing operations (EMBED_BATCH_SIZE...). */
  readonly limits: GraphLimits
}

/** A run as filed: its manifest, result and report. */
export interface RunDetail {
  readonly manifest: RunManifest
  readonly result: unknown
  readonly report: string
}

/** A search hit. */
export interface SearchMatch {
  readonly score: number
  readonly text: string
  readonly source: string | null
  readonly run_id: string | null
}

/** The service. Every failure is a `WorkspaceError` (HTTP-status annotated). */
export interface WorkspacesService {
  readonly create: (body: CreateWorkspace) => Effect.Effect<WorkspaceManifest, WorkspaceError>
  readonly list: () => Effect.Effect<ReadonlyArray<WorkspaceManifest>, WorkspaceError>
  readonly get: (id: string) => Effect.Effect<WorkspaceManifest, WorkspaceError>
  readonly patch: (id: string, body: PatchWorkspace) => Effect.Effect<WorkspaceManifest, WorkspaceError>
  /** Deletes every object of the workspace (from any state: an empty Created one too). */
  readonly remove: (id: string) => Effect.Effect<void, WorkspaceError>
  /** Active → Archived: the runs' files packed into `archive/runs.tar.gz` (gzip), originals removed; run manifests kept. */
  readonly archive: (id: string) => Effect.Effect<WorkspaceManifest, WorkspaceError>
  /** Archived → Active: the archive unpacked back, byte for byte, then removed. */
  readonly unarchive: (id: string) => Effect.Effect<WorkspaceManifest, WorkspaceError>
  readonly runs: (id: string) => Effect.Effect<ReadonlyArray<RunManifest>, WorkspaceError>
  readonly run: (id: string, runId: string) => Effect.Effect<RunDetail, WorkspaceError>
  readonly artifacts: (id: string) => Effect.Effect<ReadonlyArray<ArtifactRecord>, WorkspaceError>
  readonly search: (id: string, query: string, topK: number) => Effect.Effect<{ workspace_id: string; index_workspace_id: string; query: string; matches: ReadonlyArray<SearchMatch> }, WorkspaceError>
  /** Files graph runs carrying `workspace_id` (register with `graphRunObservers`). */
  readonly observer: GraphRunObserver
}

/** The service tag. */
export class Workspaces extends Context.Tag("@platform/workspaces/Workspaces")<Workspaces, WorkspacesService>() {}

const enc = new TextEncoder()
const dec = new TextDecoder()
const now = () => new Date().toISOString()
const json = (v: unknown) => JSON.stringify(v, null, 2) + "\n"

const SCREENSHOT_OPS = new Set(["screenshot"])
/** A stored name reduced to a bucket key segment. */
const segment = (name: string): string => {
  const s = path.basename(name).replace(/[^A-Za-z0-9_.-]/g, "_").replace(/^[^A-Za-z0-9_]+/, "").slice(0, 150)
  return s === "" ? "file" : s
}

/** Builds the service over `deps`. */
export const make = (deps: WorkspacesDeps): WorkspacesService => {
  const { bucket, locks } = deps.storage
  const root = (id: string) => `workspaces/${id}/`
  const manifestKey = (id: string) => `${root(id)}manifest.json`
  const archiveKey = (id: string) => `${root(id)}archive/runs.tar.gz`

  const storageError = (what: string) => (e: unknown) =>
    e instanceof WorkspaceStorageError ? e : new WorkspaceStorageError({ error: `${what}: ${(e as Error)?.message ?? String(e)}` })
  const io = <A>(what: string, f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: storageError(what) })

  const readJson = <A, I>(key: string, schema: Schema.Schema<A, I>) =>
    io(`read ${key}`, () => bucket.get(key)).pipe(
      Effect.flatMap((bytes) =>
        bytes === undefined
          ? Effect.succeed(undefined)
          : Schema.decodeUnknown(Schema.parseJson(schema))(dec.decode(bytes)).pipe(Effect.mapError((e) => new WorkspaceStorageError({ error: `${key} is damaged: ${e.message.split("\n")[0]}` })))
      )
    )
  const writeJson = (key: string, value: unknown) => io(`write ${key}`, () => bucket.put(key, json(value), "application/json"))

  /** The manifest, or WorkspaceNotFound (also for ids that are not workspace ids). */
  const load = (id: string) =>
    WORKSPACE_ID.test(id)
      ? readJson(manifestKey(id), WorkspaceManifest).pipe(Effect.flatMap((m) => (m ? Effect.succeed(m) : Effect.fail(WorkspaceNotFound.of(id)))))
      : Effect.fail(WorkspaceNotFound.of(id))

  /** Runs `eff` holding the lock `name` (see the module comment). */
  const locked = <A, E>(name: string, eff: Effect.Effect<A, E>): Effect.Effect<A, E | WorkspaceStorageError> =>
    io(`lock ${name}`, () => locks.withLock(name, () => Effect.runPromiseExit(eff))).pipe(Effect.flatMap((exit) => exit))

  const conflict = (m: WorkspaceManifest, error: string) => new WorkspaceStateConflict({ error, workspace_id: m.workspace_id, status: m.status })

  /**
   * Recounts `runs_count`, `artifact_count` and `total_size_bytes` from the stored objects
   * (lock held). While archived the run files live in the archive: their count is kept.
   */
  const recount = (m: WorkspaceManifest) =>
    io(`list ${root(m.workspace_id)}`, () => bucket.list(root(m.workspace_id))).pipe(Effect.map((objects) => {
      const rel = objects.map((o) => ({ ...o, key: o.key.slice(root(m.workspace_id).length) })).filter((o) => o.key !== "manifest.json")
      const isRunManifest = (k: string) => /^runs\/[^/]+\/manifest\.json$/.test(k)
      return {
        ...m,
        runs_count: rel.filter((o) => isRunManifest(o.key)).length,
        artifact_count: m.status === "archived" ? m.artifact_count : rel.filter((o) => !isRunManifest(o.key) && !o.key.startsWith("archive/")).length,
        total_size_bytes: rel.reduce((n, o) => n + o.size, 0)
      }
    }))

  const save = (m: WorkspaceManifest) => writeJson(manifestKey(m.workspace_id), m).pipe(Effect.as(m))

  const all = () =>
    io("list workspaces/", () => bucket.list("workspaces/")).pipe(
      Effect.map((objects) => objects.map((o) => /^workspaces\/(ws_[A-Za-z0-9]+)\/manifest\.json$/.exec(o.key)?.[1]).filter((x): x is string => x !== undefined)),
      Effect.flatMap((ids) => Effect.forEach(ids, (id) => readJson(manifestKey(id), WorkspaceManifest), { concurrency: 8 })),
      Effect.map((ms) => ms.filter((m): m is WorkspaceManifest => m !== undefined).sort((a, b) => a.created_at.localeCompare(b.created_at)))
    )

  const nameFree = (name: string, except?: string) =>
    all().pipe(Effect.flatMap((ms) => {
      const holder = ms.find((m) => m.name.toLowerCase() === name.toLowerCase() && m.workspace_id !== except)
      return holder ? Effect.fail(new WorkspaceNameTaken({ error: `a workspace named "${holder.name}" exists (${holder.workspace_id})`, name, workspace_id: holder.workspace_id })) : Effect.void
    }))

  const runManifests = (id: string) =>
    io(`list ${root(id)}runs/`, () => bucket.list(`${root(id)}runs/`)).pipe(
      Effect.map((objects) => objects.filter((o) => /\/runs\/[^/]+\/manifest\.json$/.test(o.key)).map((o) => o.key)),
      Effect.flatMap((keys) => Effect.forEach(keys, (k) => readJson(k, RunManifest), { concurrency: 8 })),
      Effect.map((rs) => rs.filter((r): r is RunManifest => r !== undefined).sort((a, b) => a.started_at.localeCompare(b.started_at) || a.run_id.localeCompare(b.run_id)))
    )

  const indexCtx = (signal: AbortSignal): GraphOpContext => ({
    signal,
    // The vectl operations store no files; a call would be a bug worth seeing.
    files: { put: () => Promise.reject(new Error("workspace indexing stores no files")) },
    progress: async () => {},
    limits: deps.limits
  })

  // ---- filing a graph run -------------------------------------------------------------------

  /** Everything a run files, computed before the lock is taken (file copies, report, index). */
  const prepareRun = async (m: WorkspaceManifest, run: GraphRun, outcome: GraphRunOutcome, signal: AbortSignal) => {
    const runDir = `runs/${run.jobId}/`
    const files: Array<{ record: ArtifactRecord; bytes: Uint8Array }> = []
    const add = (rel: string, bytes: Uint8Array, type: ArtifactType, contentType: string | null) =>
      files.push({ record: { path: rel, size_bytes: bytes.byteLength, artifact_type: type, content_type: contentType, run_id: run.jobId }, bytes })
    const result = outcome.status === "COMPLETED"
      ? outcome.result
      : { status: "FAILED", error_kind: outcome.errorKind, error: outcome.error, ...(outcome.details ? { details: outcome.details } : {}) }
    add(`${runDir}result.json`, enc.encode(json(result)), "result", "application/json")

    // Screenshots and data: copies of the files the run's operations stored.
    const pdfs: Array<Doc> = []
    const markdown: Array<Doc> = []
    const taken = new Set<string>()
    const artifacts = outcome.status === "COMPLETED" ? outcome.result.artifacts : []
    for (const a of artifacts) {
      const bytes = await deps.storage.readStored(a.url)
      if (bytes === undefined) throw new JobFailure("INTERNAL_ERROR", `workspace ${m.workspace_id}: artifact ${a.name} (${a.url}) is not in the file store`, true)
      const screenshot = (a.content_type ?? "").startsWith("image/") || SCREENSHOT_OPS.has(a.op)
      const folder = `${runDir}artifacts/${screenshot ? "screenshots" : "data"}/`
      let name = segment(a.name)
      for (let i = 2; taken.has(folder + name); i++) name = `${i}-${segment(a.name)}`
      taken.add(folder + name)
      add(folder + name, bytes, screenshot ? "screenshot" : "data", a.content_type)
      const lower = name.toLowerCase()
      if (lower.endsWith(".pdf") || a.content_type === "application/pdf") {
        const text = await extractPdfText(bytes).catch((e) => {
          throw new JobFailure("VALIDATION_ERROR", `workspace ${m.workspace_id}: PDF ${a.name} could not be read: ${(e as Error).message}`, false)
        })
        if (text.trim()) pdfs.push({ url: folder + name, title: a.name, text })
      } else if (/\.(md|markdown)$/.test(lower) || (a.content_type ?? "").startsWith("text/markdown")) {
        markdown.push({ url: folder + name, title: a.name, text: dec.decode(bytes) })
      }
    }

    const finishedAt = now()
    const duration = outcome.status === "COMPLETED" ? outcome.result.duration_seconds : Math.max(0, (Date.parse(finishedAt) - Date.parse(run.startedAt)) / 1000)
    const report = runReport({ workspace: m, run, outcome, files: files.map((f) => f.record), finishedAt, durationSeconds: duration })
    add(`${runDir}report.md`, enc.encode(report), "report", "text/markdown; charset=utf-8")

    // The index: Markdown (the report, Markdown artifacts), synthesised text, PDF reports.
    let indexed = 0
    if (m.config.index_enabled && m.index_workspace_id) {
      const synthesised: Array<Doc> = outcome.status === "COMPLETED"
        ? Object.entries(outcome.result.outputs).filter(([k, v]) => /synthesis|summary/i.test(k) && typeof v === "string" && v.trim()).map(([k, v]) => ({ url: `${runDir}outputs/${k}`, title: k, text: v as string }))
        : []
      const docs = [{ url: `${runDir}report.md`, title: run.graphName, text: report }, ...markdown, ...synthesised, ...pdfs]
      indexed = (await indexDocs(deps.ops, m.index_workspace_id, docs, indexCtx(signal))).chunks
    }
    const manifest: RunManifest = {
      run_id: run.jobId,
      status: outcome.status,
      graph_name: run.graphName,
      duration_seconds: duration,
      started_at: run.startedAt,
      finished_at: finishedAt,
      workspace_id: m.workspace_id,
      job_id: run.jobId,
      attempt: run.attempt,
      template: run.template,
      params: { ...run.params },
      error: outcome.status === "FAILED" ? outcome.error : null,
      files: files.map((f) => f.record),
      indexed_chunks: indexed
    }
    return { runDir, files, manifest }
  }

  const refuseRun = (id: string, why: "unknown" | "archived") =>
    new JobFailure("VALIDATION_ERROR", why === "unknown" ? `workspace_id "${id}": no such workspace` : `workspace_id "${id}": the workspace is archived; unarchive it before running graphs into it`, false)

  const fileRun = (run: GraphRun, outcome: GraphRunOutcome, signal: AbortSignal): Promise<void> =>
    Effect.runPromise(Effect.gen(function*() {
      const id = run.workspaceId!
      const before = yield* load(id).pipe(Effect.catchTag("WorkspaceNotFound", () => Effect.fail(refuseRun(id, "unknown"))))
      if (before.status === "archived") return yield* Effect.fail(refuseRun(id, "archived"))
      const prepared = yield* Effect.tryPromise({ try: () => prepareRun(before, run, outcome, signal), catch: (e) => e })
      yield* locked(`workspace:${id}`, Effect.gen(function*() {
        // Checked again under the lock: archived or deleted while the run was being prepared.
        const m = yield* load(id).pipe(Effect.catchTag("WorkspaceNotFound", () => Effect.fail(refuseRun(id, "unknown"))))
        if (m.status === "archived") return yield* Effect.fail(refuseRun(id, "archived"))
        const dir = `${root(id)}${prepared.runDir}`
        // A retried attempt replaces what an earlier attempt filed.
        const stale = yield* io(`list ${dir}`, () => bucket.list(dir))
        yield* io(`delete ${dir}`, () => bucket.delete(stale.map((o) => o.key)))
        for (const f of prepared.files) yield* io(`write ${f.record.path}`, () => bucket.put(`${root(id)}${f.record.path}`, f.bytes, f.record.content_type ?? undefined))
        yield* writeJson(`${dir}manifest.json`, prepared.manifest)
        const runs = yield* runManifests(id)
        yield* io("write outputs/summary.md", () => bucket.put(`${root(id)}outputs/summary.md`, summaryReport(m, runs), "text/markdown; charset=utf-8"))
        yield* recount({ ...m, status: "active", updated_at: now() }).pipe(Effect.flatMap(save))
      }))
    }).pipe(Effect.catchAll((e) =>
      Effect.fail(
        e instanceof JobFailure
          ? e
          // The store being unreachable is worth a retry (NETWORK_ERROR is in the default retry_on).
          : e instanceof WorkspaceStorageError
          ? new JobFailure("NETWORK_ERROR", `workspace ${run.workspaceId}: ${e.error}`, true)
          : new JobFailure("INTERNAL_ERROR", `workspace ${run.workspaceId}: ${(e as Error)?.message ?? String(e)}`, false)
      )
    )))

  const observer: GraphRunObserver = {
    id: "workspaces",
    onStart: async (run) => {
      if (run.workspaceId === null) return
      const m = await Effect.runPromise(Effect.either(load(run.workspaceId)))
      if (m._tag === "Left") {
        if (m.left._tag === "WorkspaceNotFound") throw refuseRun(run.workspaceId, "unknown")
        throw new JobFailure("NETWORK_ERROR", m.left.error, true)
      }
      if (m.right.status === "archived") throw refuseRun(run.workspaceId, "archived")
    },
    onFinished: async (run, outcome, ctx) => {
      if (run.workspaceId !== null) await fileRun(run, outcome, ctx.signal)
    }
  }

  // ---- archive ------------------------------------------------------------------------------

  const withTemp = <A, E>(use: (dir: string) => Effect.Effect<A, E>) =>
    Effect.acquireUseRelease(
      io("temp dir", () => fsp.mkdtemp(path.join(os.tmpdir(), "ws-archive-"))),
      use,
      (dir) => Effect.promise(() => fsp.rm(dir, { recursive: true, force: true }))
    )

  const archive = (id: string) =>
    locked(`workspace:${id}`, Effect.gen(function*() {
      const m = yield* load(id)
      if (m.status !== "active") return yield* Effect.fail(conflict(m, m.status === "archived" ? `workspace ${id} is archived already` : `workspace ${id} has no runs yet: only an active workspace is archived`))
      const objects = yield* io(`list ${root(id)}runs/`, () => bucket.list(`${root(id)}runs/`))
      yield* withTemp((dir) => Effect.gen(function*() {
        for (const o of objects) {
          const bytes = yield* io(`read ${o.key}`, () => bucket.get(o.key))
          if (bytes === undefined) continue
          const file = path.join(dir, o.key.slice(root(id).length))
          yield* io("stage", () => fsp.mkdir(path.dirname(file), { recursive: true }).then(() => fsp.writeFile(file, bytes)))
        }
        const file = path.join(dir, "runs.tar.gz")
        yield* io("tar", () => tar.create({ gzip: { level: 9 }, file, cwd: dir, portable: true }, ["runs"]))
        const packed = yield* io("read archive", () => fsp.readFile(file))
        yield* io(`write ${archiveKey(id)}`, () => bucket.put(archiveKey(id), new Uint8Array(packed), "application/gzip"))
      }))
      // Originals removed only once the archive is stored; run manifests stay (metadata kept).
      yield* io("remove archived files", () => bucket.delete(objects.filter((o) => !o.key.endsWith("/manifest.json")).map((o) => o.key)))
      return yield* recount({ ...m, status: "archived", updated_at: now() }).pipe(Effect.flatMap(save))
    }))

  const unarchive = (id: string) =>
    locked(`workspace:${id}`, Effect.gen(function*() {
      const m = yield* load(id)
      if (m.status !== "archived") return yield* Effect.fail(conflict(m, `workspace ${id} is not archived`))
      const packed = yield* io(`read ${archiveKey(id)}`, () => bucket.get(archiveKey(id)))
      if (packed) {
        yield* withTemp((dir) => Effect.gen(function*() {
          const file = path.join(dir, "runs.tar.gz")
          const out = path.join(dir, "out")
          yield* io("stage", () => fsp.mkdir(out).then(() => fsp.writeFile(file, packed)))
          // tar refuses absolute paths and `..` entries by default: nothing lands outside `out`.
          yield* io("untar", () => tar.extract({ file, cwd: out }))
          const files = (yield* io("walk", () => fsp.readdir(out, { recursive: true, withFileTypes: true }))).filter((e) => e.isFile())
          for (const f of files) {
            const rel = path.relative(out, path.join(f.parentPath, f.name)).split(path.sep).join("/")
            if (!rel.startsWith("runs/")) continue
            const bytes = yield* io(`read ${rel}`, () => fsp.readFile(path.join(out, rel)))
            yield* io(`restore ${rel}`, () => bucket.put(`${root(id)}${rel}`, new Uint8Array(bytes)))
          }
        }))
        yield* io("remove archive", () => bucket.delete([archiveKey(id)]))
      }
      return yield* recount({ ...m, status: "active", updated_at: now() }).pipe(Effect.flatMap(save))
    }))

  // ---- the rest -----------------------------------------------------------------------------

  const requireIndex = (m: WorkspaceManifest) =>
    m.status === "archived"
      ? Effect.fail(conflict(m, `workspace ${m.workspace_id} is archived; unarchive it to search`))
      : m.config.index_enabled && m.index_workspace_id
      ? Effect.succeed(m.index_workspace_id)
      : Effect.fail(conflict(m, `workspace ${m.workspace_id} has no index: set config.index_enabled (PATCH) and run graphs into it`))

  return {
    create: (body) =>
      locked("workspaces:names", Effect.gen(function*() {
        yield* nameFree(body.name)
        const suffix = randomBytes(8).toString("hex")
        const at = now()
        const m: WorkspaceManifest = {
          workspace_id: `ws_${suffix}`,
          name: body.name,
          description: body.description,
          created_at: at,
          updated_at: at,
          config: body.config,
          tags: body.tags,
          runs_count: 0,
          artifact_count: 0,
          total_size_bytes: 0,
          ...(body.config.index_enabled ? { index_workspace_id: `idx_${suffix}` } : {}),
          status: "created"
        }
        return yield* save(m)
      })),
    list: all,
    get: load,
    patch: (id, body) =>
      locked(`workspace:${id}`, Effect.gen(function*() {
        const m = yield* load(id)
        if (m.status === "archived") return yield* Effect.fail(conflict(m, `workspace ${id} is archived; unarchive it to change it`))
        const next: WorkspaceManifest = {
          ...m,
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.description !== undefined ? { description: body.description } : {}),
          ...(body.tags !== undefined ? { tags: body.tags } : {}),
          ...(body.config !== undefined ? { config: body.config } : {}),
          ...((body.config?.index_enabled ?? m.config.index_enabled) && !m.index_workspace_id ? { index_workspace_id: `idx_${id.slice(3)}` } : {}),
          updated_at: now()
        }
        if (body.name !== undefined && body.name !== m.name) return yield* locked("workspaces:names", nameFree(body.name, id).pipe(Effect.zipRight(save(next))))
        return yield* save(next)
      })),
    remove: (id) =>
      locked(`workspace:${id}`, Effect.gen(function*() {
        yield* load(id)
        // The manifest goes first: a run landing meanwhile finds no workspace and fails cleanly.
        yield* io("delete manifest", () => bucket.delete([manifestKey(id)]))
        const rest = yield* io(`list ${root(id)}`, () => bucket.list(root(id)))
        yield* io(`delete ${root(id)}`, () => bucket.delete(rest.map((o) => o.key)))
      })),
    archive,
    unarchive,
    runs: (id) => load(id).pipe(Effect.zipRight(runManifests(id))),
    run: (id, runId) =>
      Effect.gen(function*() {
        const m = yield* load(id)
        const missing = new RunNotFound({ error: `workspace ${id} has no run "${runId}"`, workspace_id: id, run_id: runId })
        if (!RUN_ID.test(runId)) return yield* Effect.fail(missing)
        const manifest = yield* readJson(`${root(id)}runs/${runId}/manifest.json`, RunManifest)
        if (!manifest) return yield* Effect.fail(missing)
        if (m.status === "archived") return yield* Effect.fail(conflict(m, `workspace ${id} is archived: run ${runId}'s result and report are in the archive; unarchive it to read them`))
        const result = yield* readJson(`${root(id)}runs/${runId}/result.json`, Schema.Unknown)
        const report = yield* io("read report", () => bucket.get(`${root(id)}runs/${runId}/report.md`))
        return { manifest, result: result ?? null, report: report ? dec.decode(report) : "" }
      }),
    artifacts: (id) =>
      Effect.gen(function*() {
        yield* load(id)
        const runs = yield* runManifests(id)
        const outputs = yield* io("list outputs/", () => bucket.list(`${root(id)}outputs/`))
        return [
          ...runs.flatMap((r) => r.files),
          ...outputs.map((o): ArtifactRecord => ({ path: o.key.slice(root(id).length), size_bytes: o.size, artifact_type: "output", content_type: o.key.endsWith(".md") ? "text/markdown; charset=utf-8" : null, run_id: null }))
        ]
      }),
    search: (id, query, topK) =>
      Effect.gen(function*() {
        const m = yield* load(id)
        const store = yield* requireIndex(m)
        const hits = yield* io("search", () => searchStore(deps.ops, store, query, topK, indexCtx(new AbortController().signal)))
        return {
          workspace_id: id,
          index_workspace_id: store,
          query,
          matches: hits.map((h) => ({ score: h.score ?? 0, text: h.text, source: h.source, run_id: /^runs\/([^/]+)\//.exec(h.source ?? "")?.[1] ?? null }))
        }
      }),
    observer
  }
}

/** A layer providing the service over `deps`. */
export const layer = (deps: WorkspacesDeps) => Layer.succeed(Workspaces, make(deps))
