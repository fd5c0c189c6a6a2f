// Stale stack locks. Pulumi's DIY backends (file, postgres) lock a stack with a blob naming the
// process that holds it (`.pulumi/locks/<org>/<project>/<stack>/<id>.json`: a file, or a row),
// with no expiry; when the operator is killed mid-update, that lock outlives the process. A lock is broken only
// when its holder is provably gone: on this host, when its process no longer runs; on another
// host (a previous leader's pod), when a HolderCheck proves that host's engines gone. A leader
// that was frozen (a paused VM, not killed) past its lease may resume its engine at any moment:
// breaking its lock on the strength of the lease alone would let two engines write one stack.
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import type { HolderCheck, HolderVerdict } from "../base/lock-holders.ts";
import { processStat } from "../base/procfs.ts";
import type { Logger } from "../base/log.ts";
import type { StateIo } from "./state-io.ts";
import { stateStore, type StateStore } from "./state-store.ts";

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

const locksPrefix = ".pulumi/locks/";

/** A folder of lock blobs: `<org>/<project>/<stack>` (or `<stack>` in older backends) and the keys of its blobs. */
interface LockFolder {
  readonly stack: string;
  readonly keys: string[];
}

/** Folders of `project`'s stack locks, all or `stack`'s: <org>/<project>/<stack>, or <stack> in older backends. */
async function projectLockFolders(store: StateStore | undefined, project: string, stack?: string): Promise<LockFolder[]> {
  if (!store) return [];
  const folders = new Map<string, LockFolder>();
  for (const key of await store.list(locksPrefix)) {
    const path = key.slice(locksPrefix.length).split("/");
    const folderPath = path.slice(0, -1);
    const matches = folderPath.length === 3
      ? folderPath[1] === project && (stack === undefined || folderPath[2] === stack)
      // An older backend's <stack> folder names no project: only a stack asked for by name matches.
      : folderPath.length === 1 && folderPath[0] === stack;
    if (!matches) continue;
    const name = folderPath.join("/");
    const folder = folders.get(name) ?? { stack: folderPath.at(-1)!, keys: [] };
    folder.keys.push(key);
    folders.set(name, folder);
  }
  return [...folders.values()];
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
 * A lock's content; an unreadable one (a write the disk cut short) names no holder: as stale as a
 * dead one's. Undefined when it is gone meanwhile. A store that does not answer throws: that says
 * nothing about the lock.
 */
async function readLock(key: string, store: StateStore): Promise<LockInfo | undefined> {
  const text = await store.read(key);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as LockInfo;
  } catch {
    return {};
  }
}

/** Pulumi's file backend writes <id>.json and, beside it, <id>.json.attrs; the attributes go with their lock. */
async function removeLock(key: string, store: StateStore): Promise<void> {
  await store.remove(key);
  if (store.attributeFiles) await store.remove(`${key}.attrs`);
}

/** Removes a folder's locks whose holder is provably gone; reports why a lock stays. */
async function breakLocksIn(folder: LockFolder, log: Logger, store: StateStore, otherHost: HolderCheck | undefined): Promise<LockSweep> {
  const keys = folder.keys;
  let removed = false;
  for (const key of keys.filter((k) => !k.endsWith(".attrs"))) {
    const lock = await readLock(key, store);
    if (!lock) continue;
    const verdict = await judge(lock, otherHost);
    if (!verdict.gone) return { removed, held: `${describe(lock)}: ${verdict.why}` };
    log.warn("breaking a stale stack lock", { stack: folder.stack, holderPid: lock.pid, holderHost: lock.hostname, since: lock.timestamp, why: verdict.why });
    await removeLock(key, store);
    removed = true;
  }
  // Attributes whose lock is gone (a removal cut short).
  for (const key of keys.filter((k) => k.endsWith(".attrs") && !keys.includes(k.slice(0, -".attrs".length)))) await store.remove(key);
  return { removed };
}

/** Removes the stale locks of `stack`: `removed` when there was one; `held` says why a lock stays. */
export async function breakStaleLocks(backendUrl: string, project: string, stack: string, log: Logger, io: StateIo, otherHost?: HolderCheck): Promise<LockSweep> {
  const store = stateStore(backendUrl, io);
  let removed = false;
  for (const folder of await projectLockFolders(store, project, stack)) {
    const sweep = await breakLocksIn(folder, log, store!, otherHost);
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
  const store = stateStore(backendUrl, io);
  const unlocked = new Set<string>();
  // This host's dead holders first, with no API call: a sweep cut short (a replica exiting on a
  // lost lease) still removes the locks of the engines it has just killed.
  for (const check of [undefined, otherHost]) {
    for (const folder of await projectLockFolders(store, project)) if ((await breakLocksIn(folder, log, store!, check)).removed) unlocked.add(folder.keys[0]!.split("/").slice(0, -1).join("/"));
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
  const store = stateStore(backendUrl, io);
  let removed = 0;
  for (const folder of await projectLockFolders(store, project)) {
    for (const key of folder.keys.filter((k) => !k.endsWith(".attrs"))) {
      const lock = await readLock(key, store!);
      if (lock?.hostname !== hostname()) continue;
      log.warn("breaking a stack lock of an earlier container of this pod's name", { stack: folder.stack, holderPid: lock.pid, holderHost: lock.hostname, since: lock.timestamp });
      await removeLock(key, store!);
      removed++;
    }
  }
  return removed;
}
