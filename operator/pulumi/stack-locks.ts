// Stale stack locks. The file backend locks a stack with a file naming the process that holds it;
// when the operator is killed mid-update, that file outlives the process. A lock is broken only
// when its holder is provably gone: on this host, when its process no longer runs; on another
// host (a previous leader's pod), when a HolderCheck proves that host's engines gone. A leader
// that was frozen (a paused VM, not killed) past its lease may resume its engine at any moment:
// breaking its lock on the strength of the lease alone would let two engines write one stack.
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { basename, join, relative, sep } from "node:path";
import { fileBackendRoot } from "./engine.ts";
import type { HolderCheck, HolderVerdict } from "../base/lock-holders.ts";
import { processStat } from "../base/procfs.ts";
import type { Logger } from "../base/log.ts";
import { StateFolderUnanswered, type StateIo } from "./state-io.ts";

interface LockInfo {
  pid?: number;
  hostname?: string;
  timestamp?: string;
}

/** What a sweep of one stack did: whether it removed locks, and why a lock stays when one does. */
export interface LockSweep {
  readonly removed: boolean;
  readonly held?: string;
}

/**
 * Whether `pid` still runs. A zombie does not: it has exited and only waits to be reaped, by its
 * parent or, once that died too (an engine killed with its operator), by init, which may take
 * its time (about a second on this project's CI machine; never, where init does not reap).
 */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // Only ESRCH says no such process. EPERM says it runs as another user: a person's `appstack
    // pulumi` or `appstack stacks`, whose lock is as live as an engine's of this operator.
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
  }
  return processStat(pid)?.fields[0] !== "Z";
}

/** When a process started (ms since the epoch), from /proc; undefined where that cannot be read. */
function processStartMs(pid: number): number | undefined {
  try {
    const startTicks = Number(processStat(pid)?.fields[19]);
    const bootSeconds = Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))?.[1]);
    // USER_HZ is 100 on Linux.
    return Number.isFinite(startTicks) && Number.isFinite(bootSeconds) ? bootSeconds * 1000 + startTicks * 10 : undefined;
  } catch {
    return undefined;
  }
}

/** Slack for the rounding of boot time (whole seconds) and of start ticks. */
const startSlackMs = 2_000;

/**
 * Whether the lock's holder still runs: a process of that pid that started before the lock was
 * taken. Pids wrap (pid_max is often 32768 and a busy operator starts many processes), and a
 * later process that got a killed engine's pid must not keep its lock for ever.
 */
function holderAlive(lock: LockInfo): boolean {
  if (lock.pid === undefined || !processAlive(lock.pid)) return false;
  const takenMs = lock.timestamp ? Date.parse(lock.timestamp) : NaN;
  const startedMs = processStartMs(lock.pid);
  return Number.isNaN(takenMs) || startedMs === undefined || startedMs <= takenMs + startSlackMs;
}

/** Every folder holding lock files, up to <org>/<project>/<stack>. */
async function lockFolders(root: string, io: StateIo): Promise<string[]> {
  if (!(await io.exists(root))) return [];
  const found: string[] = [];
  const walk = async (dir: string, depth: number) => {
    const entries = await io.listEntries(dir);
    if (entries.some((entry) => entry.isFile())) found.push(dir);
    for (const entry of entries) if (entry.isDirectory() && depth < 3) await walk(join(dir, entry.name), depth + 1);
  };
  await walk(root, 0);
  return found;
}

/** Folders of `project`'s stack locks, all or `stack`'s: <org>/<project>/<stack>, or <stack> in older backends. */
async function projectLockFolders(backendUrl: string, project: string, io: StateIo, stack?: string): Promise<string[]> {
  const backend = fileBackendRoot(backendUrl);
  if (!backend) return [];
  const root = join(backend, "locks");
  return (await lockFolders(root, io)).filter((folder) => {
    const path = relative(root, folder).split(sep);
    if (path.length === 3) return path[1] === project && (stack === undefined || path[2] === stack);
    // An older backend's <stack> folder names no project: only a stack asked for by name matches.
    return path.length === 1 && path[0] === stack;
  });
}

function describe(lock: LockInfo): string {
  return `pid ${lock.pid ?? "?"} on ${lock.hostname ?? "an unnamed host"}${lock.timestamp ? ` since ${lock.timestamp}` : ""}`;
}

/** Whether a lock's holder is provably gone. Without a check, another host's holder never is. */
async function judge(lock: LockInfo, otherHost: HolderCheck | undefined): Promise<HolderVerdict> {
  if (lock.hostname === undefined) return { gone: true, why: "the lock names no holder" };
  if (lock.hostname === hostname()) return holderAlive(lock) ? { gone: false, why: `its process still runs on this host` } : { gone: true, why: "its process no longer runs" };
  if (!otherHost) return { gone: false, why: "it was taken on another host, and nothing here can prove that host's engine gone" };
  const takenMs = lock.timestamp ? Date.parse(lock.timestamp) : NaN;
  return otherHost(lock.hostname, Number.isNaN(takenMs) ? undefined : takenMs);
}

/**
 * A lock file's content; an unreadable one (a write the disk cut short) names no holder: as stale
 * as a dead one's. A state folder that does not answer says nothing about it.
 */
async function readLock(path: string, io: StateIo): Promise<LockInfo> {
  try {
    return JSON.parse(await io.readText(path)) as LockInfo;
  } catch (error) {
    if (error instanceof StateFolderUnanswered) throw error;
    return {};
  }
}

/** Pulumi writes <id>.json and, beside it, <id>.json.attrs; the attributes go with their lock. */
async function removeLock(path: string, io: StateIo): Promise<void> {
  await io.remove(path);
  await io.remove(`${path}.attrs`);
}

/** Removes a folder's locks whose holder is provably gone; reports why a lock stays. */
async function breakLocksIn(folder: string, log: Logger, io: StateIo, otherHost: HolderCheck | undefined): Promise<LockSweep> {
  const files = await io.list(folder);
  let removed = false;
  for (const file of files.filter((f) => !f.endsWith(".attrs"))) {
    const path = join(folder, file);
    const lock = await readLock(path, io);
    const verdict = await judge(lock, otherHost);
    if (!verdict.gone) return { removed, held: `${describe(lock)}: ${verdict.why}` };
    log.warn("breaking a stale stack lock", { stack: basename(folder), holderPid: lock.pid, holderHost: lock.hostname, since: lock.timestamp, why: verdict.why });
    await removeLock(path, io);
    removed = true;
  }
  // Attributes whose lock is gone (a removal cut short).
  for (const file of files.filter((f) => f.endsWith(".attrs") && !files.includes(f.slice(0, -".attrs".length)))) await io.remove(join(folder, file));
  return { removed };
}

/** Removes the stale locks of `stack`: `removed` when there was one; `held` says why a lock stays. */
export async function breakStaleLocks(backendUrl: string, project: string, stack: string, log: Logger, io: StateIo, otherHost?: HolderCheck): Promise<LockSweep> {
  let removed = false;
  for (const folder of await projectLockFolders(backendUrl, project, io, stack)) {
    const sweep = await breakLocksIn(folder, log, io, otherHost);
    removed ||= sweep.removed;
    if (sweep.held) return { removed, held: sweep.held };
  }
  return { removed };
}

/**
 * Removes the stale locks of every stack of `project`: run when this operator starts to lead, so
 * that a predecessor killed mid-operation leaves no lock behind, even on a stack that needs no
 * further operation. Returns how many stacks it unlocked.
 */
export async function breakAllStaleLocks(backendUrl: string, project: string, log: Logger, io: StateIo, otherHost?: HolderCheck): Promise<number> {
  const unlocked = new Set<string>();
  // This host's dead holders first, with no API call: a sweep cut short (a replica exiting on a
  // lost lease) still removes the locks of the engines it has just killed.
  for (const check of [undefined, otherHost]) {
    for (const folder of await projectLockFolders(backendUrl, project, io)) if ((await breakLocksIn(folder, log, io, check)).removed) unlocked.add(folder);
    if (!otherHost) break;
  }
  return unlocked.size;
}

/**
 * Removes every lock of `project` that names this host, at the start of a replica whose hostname
 * is its pod's name and before it runs any engine (as leader or standby). Each such lock was there
 * before this container started, so its holder ran in an earlier container of this pod (the
 * kubelet starts a container again only once it has exited) or in an earlier pod of this name
 * (gone from the API server before another pod may take its name): it is gone, whatever the clocks
 * of the nodes involved say. This is what frees a newer pod's name from its predecessor's locks
 * when no comparison of one clock can (peer-pods.ts). Returns how many locks it removed.
 */
export async function breakLocksOfEarlierContainers(backendUrl: string, project: string, log: Logger, io: StateIo): Promise<number> {
  let removed = 0;
  for (const folder of await projectLockFolders(backendUrl, project, io)) {
    for (const file of (await io.list(folder)).filter((f) => !f.endsWith(".attrs"))) {
      const path = join(folder, file);
      const lock = await readLock(path, io);
      if (lock.hostname !== hostname()) continue;
      log.warn("breaking a stack lock of an earlier container of this pod's name", { stack: basename(folder), holderPid: lock.pid, holderHost: lock.hostname, since: lock.timestamp });
      await removeLock(path, io);
      removed++;
    }
  }
  return removed;
}
