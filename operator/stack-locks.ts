// Stale stack locks. The file backend locks a stack with a file naming the process that holds it;
// when the operator is killed mid-update, that file outlives the process. Only the leader runs
// operations, one at a time per stack, so a lock not held by a live process on this host is stale.
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "./log.ts";

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

function lockFolders(root: string, stack: string): string[] {
  if (!existsSync(root)) return [];
  const found: string[] = [];
  const walk = (dir: string, depth: number) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const path = join(dir, entry.name);
      if (entry.name === stack) found.push(path);
      else if (depth < 3) walk(path, depth + 1);
    }
  };
  walk(root, 0);
  return found;
}

/** Removes the stale locks of `stack`; true when there was one and no live holder remains. */
export function breakStaleLocks(backendUrl: string, project: string, stack: string, log: Logger): boolean {
  if (!backendUrl.startsWith("file://")) return false;
  const locksRoot = join(fileURLToPath(backendUrl), ".pulumi", "locks");
  let removed = false;
  // Project-scoped backends nest locks as <org>/<project>/<stack>; older ones as <stack>.
  for (const folder of lockFolders(locksRoot, stack).filter((f) => f.includes(`/${project}/`) || f === join(locksRoot, stack))) {
    for (const file of readdirSync(folder)) {
      const path = join(folder, file);
      let lock: LockInfo = {};
      try {
        lock = JSON.parse(readFileSync(path, "utf8")) as LockInfo;
      } catch {
        // An unreadable lock is as stale as one whose owner is gone.
      }
      const live = lock.hostname === hostname() && lock.pid !== undefined && processAlive(lock.pid);
      if (live) return false;
      log.warn("breaking a stale stack lock", { stack, holderPid: lock.pid, holderHost: lock.hostname, since: lock.timestamp });
      rmSync(path, { force: true });
      removed = true;
    }
  }
  return removed;
}
