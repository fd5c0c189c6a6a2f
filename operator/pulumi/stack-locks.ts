// Stale stack locks. The file backend locks a stack with a file naming the process that holds it;
// when the operator is killed mid-update, that file outlives the process. Only the leader runs
// operations, one at a time per stack, so a lock not held by a live process on this host is stale.
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { hostname } from "node:os";
import { basename, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "../manager/log.ts";

interface LockInfo {
  pid?: number;
  hostname?: string;
  timestamp?: string;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** When a process started (ms since the epoch), from /proc; undefined where that cannot be read. */
function processStartMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const startTicks = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
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
function lockFolders(root: string): string[] {
  if (!existsSync(root)) return [];
  const found: string[] = [];
  const walk = (dir: string, depth: number) => {
    const entries = readdirSync(dir, { withFileTypes: true });
    if (entries.some((entry) => entry.isFile())) found.push(dir);
    for (const entry of entries) if (entry.isDirectory() && depth < 3) walk(join(dir, entry.name), depth + 1);
  };
  walk(root, 0);
  return found;
}

/** Folders of `project`'s stack locks, all or `stack`'s: <org>/<project>/<stack>, or <stack> in older backends. */
function projectLockFolders(backendUrl: string, project: string, stack?: string): string[] {
  if (!backendUrl.startsWith("file://")) return [];
  const root = join(fileURLToPath(backendUrl), ".pulumi", "locks");
  return lockFolders(root).filter((folder) => {
    const path = relative(root, folder).split(sep);
    if (path.length === 3) return path[1] === project && (stack === undefined || path[2] === stack);
    // An older backend's <stack> folder names no project: only a stack asked for by name matches.
    return path.length === 1 && path[0] === stack;
  });
}

/** Removes a folder's locks unless a live process holds one; true when it removed any. */
function breakLocksIn(folder: string, log: Logger): boolean {
  let removed = false;
  for (const file of readdirSync(folder)) {
    const path = join(folder, file);
    let lock: LockInfo = {};
    try {
      lock = JSON.parse(readFileSync(path, "utf8")) as LockInfo;
    } catch {
      // An unreadable lock is as stale as one whose owner is gone.
    }
    const live = lock.hostname === hostname() && holderAlive(lock);
    if (live) return false;
    if (!file.endsWith(".attrs")) log.warn("breaking a stale stack lock", { stack: basename(folder), holderPid: lock.pid, holderHost: lock.hostname, since: lock.timestamp });
    rmSync(path, { force: true });
    removed = true;
  }
  return removed;
}

/** Removes the stale locks of `stack`; true when there was one and no live holder remains. */
export function breakStaleLocks(backendUrl: string, project: string, stack: string, log: Logger): boolean {
  let removed = false;
  for (const folder of projectLockFolders(backendUrl, project, stack)) removed = breakLocksIn(folder, log) || removed;
  return removed;
}

/**
 * Removes the stale locks of every stack of `project`: run when this operator starts to lead, so
 * that a predecessor killed mid-operation leaves no lock behind, even on a stack that needs no
 * further operation.
 */
export function breakAllStaleLocks(backendUrl: string, project: string, log: Logger): number {
  return projectLockFolders(backendUrl, project).filter((folder) => breakLocksIn(folder, log)).length;
}
