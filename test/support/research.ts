/**
 * The platform.yaml of a research-service test or benchmark: the `jobs` listener (ephemeral
 * port), the `gateway` listener on a fixed free port (worker threads find it in the config) with
 * one `upstream` engine pointed at an OpenAI-compatible model fixture, `jobs` on the embedded
 * backend, `llm` calling that gateway, and the caller's other plugin sections (`plugins`, already
 * indented by two spaces).
 */
import { freePort } from "../plugins/jobs/support.ts"

export interface ResearchYamlOptions {
  readonly dataDir: string
  /** Base URL of the model fixture (`http://127.0.0.1:PORT/v1`); it expects `upstreamKey`. */
  readonly modelUrl: string
  readonly upstreamKey: string
  /** The gateway's bearer token (16+ characters). */
  readonly token: string
  /** Further plugin sections, YAML indented by two spaces. */
  readonly plugins: string
}

/** Builds the YAML (picks the gateway's port). */
export const researchYaml = async (o: ResearchYamlOptions): Promise<string> => `data_dir: ${o.dataDir}
log: { level: error }
listeners:
  - { name: gateway, host: 127.0.0.1, port: ${await freePort()} }
  - { name: jobs, host: 127.0.0.1, port: 0 }
plugins:
  gateway:
    token: ${o.token}
    engines:
      - { id: model-linear, kind: upstream, default: true, url: "${o.modelUrl}", api_key: ${o.upstreamKey} }
  jobs:
    backend: embedded
    files: { backend: local }
  llm:
    api_key: ${o.token}
    timeout_s: 120
${o.plugins}`
