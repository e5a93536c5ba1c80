/**
 * CLI commands of the `cluster-vpn` plugin: `platform cluster health|devices` and
 * `platform cluster banks list|create|delete|idle|resume`, clients of a running Cluster API.
 */
import { defineCommands } from "../../core/Command.ts"
import { BanksCreate, BanksDelete, BanksIdle, BanksList, BanksResume, ClusterDevices, ClusterHealth } from "./commands/cluster.ts"

export default defineCommands("cluster-vpn", {
  "cluster health": ClusterHealth,
  "cluster devices": ClusterDevices,
  "cluster banks list": BanksList,
  "cluster banks create": BanksCreate,
  "cluster banks delete": BanksDelete,
  "cluster banks idle": BanksIdle,
  "cluster banks resume": BanksResume
})
