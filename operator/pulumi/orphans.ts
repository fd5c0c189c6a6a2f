// Plugins left running by a killed engine. Pulumi starts each plugin in a process group of its
// own, so when the operator and its engines are killed outside a container (in a pod the whole
// container goes), the kubernetes provider processes live on, idle, about 120 MiB each. Adopted
// by init, they are known orphans: no engine of ours will talk to them again.
import { readdirSync, readFileSync } from "node:fs";
import { join, sep } from "node:path";
import type { Logger } from "../manager/log.ts";

export interface ProcessInfo {
  readonly pid: number;
  readonly parentPid: number;
  readonly command: string;
}

function processInfo(pid: number): ProcessInfo | undefined {
  try {
    const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] ?? "";
    const parent = /^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return parent ? { pid, parentPid: Number(parent), command } : undefined;
  } catch {
    // Gone meanwhile, or not ours to read.
    return undefined;
  }
}

/** The plugins started from `pulumiHome` whose engine is gone (Linux; elsewhere none are found). */
export function orphanedPlugins(pulumiHome: string): ProcessInfo[] {
  if (process.platform !== "linux") return [];
  const plugins = join(pulumiHome, "plugins") + sep;
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .map((entry) => processInfo(Number(entry)))
    .filter((info): info is ProcessInfo => info !== undefined && info.parentPid === 1 && info.command.startsWith(plugins));
}

/** Kills the orphaned plugins of `pulumiHome`; how many it killed. */
export function killOrphanedPlugins(pulumiHome: string, log: Logger): number {
  let killed = 0;
  for (const info of orphanedPlugins(pulumiHome)) {
    try {
      process.kill(info.pid, "SIGKILL");
      killed++;
      log.warn("killed a Pulumi plugin left running by a killed engine", { pid: info.pid, plugin: info.command });
    } catch {
      // Gone meanwhile.
    }
  }
  return killed;
}
