/**
 * What the `platform graph` commands share: the graph service of an inspected kernel (its
 * registered operations, the built-in templates and the data directory's custom ones), built
 * without serving anything.
 */
import * as path from "node:path"
import { inspect } from "../../../core/Kernel.ts"
import { Graphs } from "../Graphs.ts"
import { TemplateStore } from "../Templates.ts"

/** Boots the platform of `configFile` in inspect mode and returns its graph service. */
export const offlineGraphs = async (configFile: string | undefined): Promise<Graphs> => {
  const kernel = await inspect({ file: configFile })
  const dataDir = path.resolve(kernel.loaded.dir, kernel.loaded.config.data_dir)
  return new Graphs(kernel.graphOps, new TemplateStore(path.join(dataDir, "job-graph", "templates")))
}
