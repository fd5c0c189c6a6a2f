// Control-plane processes: started with their output in a log file, stopped by signal, and found
// again from the cluster's state file after the process that started them has gone.
import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { commandLine, processStat } from "../../operator/base/procfs.ts";

export interface ComponentProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** How it was started, so that it can be started again the same way. */
  readonly binary: string;
  readonly args: readonly string[];
}

export interface StartOptions {
  /** The component outlives the command that started it (`cluster up`). */
  readonly detached: boolean;
}

export function startComponent(name: string, binary: string, args: string[], logFile: string, options: StartOptions): ComponentProcess {
  const log = openSync(logFile, "a");
  try {
    // Always a process group of its own: a Ctrl-C in the terminal reaches the command that owns the
    // cluster, which stops its operator first and the cluster after it, not the API server at once.
    const child = spawn(binary, args, { stdio: ["ignore", log, log], detached: true });
    if (child.pid === undefined) throw new Error(`${name} did not start (${binary})`);
    // Startup failures surface through the health checks, which read the log and how it ended.
    child.on("error", () => undefined);
    const component = { name, pid: child.pid, logFile, binary, args };
    const record: StartedHere = {};
    startedHere.set(startKey(component), record);
    child.on("exit", (code, signal) => (record.ending = signal ? `killed by ${signal}` : `exit code ${code}`));
    if (options.detached) child.unref();
    return component;
  } finally {
    closeSync(log);
  }
}

interface StartedHere {
  /** How it ended ("exit code 1", "killed by SIGKILL"), once its exit event has come. */
  ending?: string;
}

/**
 * The components this process started, until they end. Their exit event says whether they still
 * run; their command line cannot: spawn returns once the child's exec has closed its
 * close-on-exec files, and until the kernel has set up the new program's arguments a moment later,
 * /proc/<pid>/cmdline reads empty, which `isOurs` would take for a process that has gone.
 */
const startedHere = new Map<string, StartedHere>();

/** A pid alone could be another process's after a restart; with its log file it names one start. */
const startKey = (component: ComponentProcess) => `${component.pid} ${component.logFile}`;

/** How `component` ended, when this process started it and saw it end. */
export function endingOf(component: ComponentProcess): string | undefined {
  return startedHere.get(startKey(component))?.ending;
}

/**
 * Whether `component` still runs: one this process started until its exit event, any other (found
 * from a cluster's state file) while `isOurs` says so.
 */
export function isRunning(component: ComponentProcess, marker: string): boolean {
  const here = startedHere.get(startKey(component));
  return here ? here.ending === undefined : isOurs(component.pid, marker);
}

/** True while `pid` is alive and still the process we started (its command line names `marker`). */
export function isOurs(pid: number, marker: string): boolean {
  const state = processStat(pid)?.fields[0];
  // A zombie is already dead; it only waits for its parent to reap it.
  if (state === undefined || state === "Z") return false;
  return commandLine(pid)?.join("\0").includes(marker) ?? false;
}

export function logTail(component: ComponentProcess, lines = 15): string {
  try {
    return readFileSync(component.logFile, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once none of them is alive. */
export async function stopComponents(components: readonly ComponentProcess[], marker: string, graceMs = 10_000): Promise<void> {
  const alive = () => components.filter((c) => isRunning(c, marker));
  for (const c of alive()) signal(c.pid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (alive().length > 0 && Date.now() < deadline) await sleep(100);
  for (const c of alive()) signal(c.pid, "SIGKILL");
  while (alive().length > 0) await sleep(50);
}

/** For process exit, where nothing asynchronous runs any more. */
export function killComponentsNow(components: readonly ComponentProcess[], marker: string): void {
  for (const c of components) if (isRunning(c, marker)) signal(c.pid, "SIGKILL");
}
