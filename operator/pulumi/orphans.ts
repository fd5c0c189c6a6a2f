// Plugins left running by a killed engine. Pulumi starts each plugin in a process group of its
// own, so when the operator and its engines are killed outside a container (in a pod the whole
// container goes), the kubernetes provider processes live on, idle, about 120 MiB each. Adopted
// by init, they are known orphans: no engine of ours will talk to them again.
import { basename, join, sep } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "../base/log.ts";
import { commandLine, processIds, processStat } from "../base/procfs.ts";

export interface ProcessInfo {
  readonly pid: number;
  readonly parentPid: number;
  readonly command: string;
  readonly args: readonly string[];
}

/** Undefined when `pid` is gone meanwhile, or not ours to read. */
function processInfo(pid: number): ProcessInfo | undefined {
  const line = commandLine(pid);
  const parent = line && processStat(pid)?.fields[1];
  if (!line || !parent) return undefined;
  const [command = "", ...args] = line;
  return { pid, parentPid: Number(parent), command, args };
}

function processes(): ProcessInfo[] {
  if (process.platform !== "linux") return [];
  return processIds()
    .map(processInfo)
    .filter((info): info is ProcessInfo => info !== undefined);
}

/**
 * The Pulumi CLI processes this process started that have `argument` among their arguments: a
 * stack's name (an operation's `--stack`, or the argument of `stack init` and `stack rm`), or
 * `version` (the CLI's check); or all of them (Linux; elsewhere none are found).
 */
export function enginesOf(argument?: string): ProcessInfo[] {
  return processes().filter((info) => info.parentPid === process.pid && basename(info.command) === "pulumi" && (argument === undefined || info.args.includes(argument)));
}

/**
 * Kills the CLI processes with `argument` (a command past its deadline), or all of them (a
 * handover); resolves, with how many it killed, once each has died (gone, or a zombie: exited,
 * its plugins already adopted by init), or after `waitMs`. SIGKILL takes effect when the process
 * is next scheduled, which on a busy machine is not at once.
 */
export async function killEngines(argument: string | undefined, why: string, log: Logger, waitMs = 5_000): Promise<number> {
  const killed: number[] = [];
  for (const info of enginesOf(argument)) {
    try {
      process.kill(info.pid, "SIGKILL");
      killed.push(info.pid);
      const command = info.args.slice(0, info.args[0] === "stack" ? 2 : 1).join(" ");
      const at = info.args.indexOf("--stack");
      const stack = at >= 0 ? info.args[at + 1] : info.args[0] === "stack" ? argument : undefined;
      log.warn(`killed a Pulumi engine: ${why}`, { pid: info.pid, command, stack });
    } catch {
      // Gone meanwhile.
    }
  }
  const until = performance.now() + waitMs;
  while (killed.some(isRunning) && performance.now() < until) await sleep(10);
  return killed.length;
}

function isRunning(pid: number): boolean {
  const state = processStat(pid)?.fields[0];
  return state !== undefined && state !== "Z" && state !== "X";
}

/** The plugins started from `pulumiHome` whose engine is gone (Linux; elsewhere none are found). */
export function orphanedPlugins(pulumiHome: string): ProcessInfo[] {
  const plugins = join(pulumiHome, "plugins") + sep;
  return processes().filter((info) => info.parentPid === 1 && info.command.startsWith(plugins));
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
