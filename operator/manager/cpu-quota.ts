// The CPUs this process may use as its cgroup's quota says (a pod's `resources.limits.cpu`):
// node's availableParallelism() counts the cores it may be scheduled on, and reads a quota only
// on some cgroup layouts (libuv 1.49+ on cgroup v2; not on the v1 hierarchies older nodes still
// mount), so a pod limited to one CPU on a 16-core node would run 17 engines at once.
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";

/** CPUs a quota of `quota` microseconds per `period` gives, rounded up (1.5 CPUs keep 2 busy part of the time); undefined for no quota. */
function cpusOf(quota: number, period: number): number | undefined {
  if (!Number.isFinite(quota) || !Number.isFinite(period) || quota <= 0 || period <= 0) return undefined;
  return Math.max(1, Math.ceil(quota / period));
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return undefined;
  }
}

/**
 * The quota in CPUs of this process's cgroup, v2 (`cpu.max`: "max 100000" or "150000 100000")
 * or v1 (`cpu.cfs_quota_us`, -1 for none, over `cpu.cfs_period_us`); undefined when there is none
 * or it cannot be read. `root` is where the cgroup file systems are mounted.
 */
export function cgroupCpuQuota(root = "/sys/fs/cgroup", procCgroup = read("/proc/self/cgroup") ?? ""): number | undefined {
  for (const line of procCgroup.split("\n")) {
    const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (path === undefined) continue;
    if (controllers === "") {
      const [quota, period] = (read(join(root, path, "cpu.max")) ?? "").split(" ");
      const cpus = quota === "max" ? undefined : cpusOf(Number(quota), Number(period));
      if (cpus !== undefined) return cpus;
    } else if (controllers!.split(",").includes("cpu")) {
      const folder = join(root, controllers!, path);
      const cpus = cpusOf(Number(read(join(folder, "cpu.cfs_quota_us"))), Number(read(join(folder, "cpu.cfs_period_us"))));
      if (cpus !== undefined) return cpus;
    }
  }
  return undefined;
}

/** The CPUs this process may keep busy: the cores it may run on, at most its cgroup's quota. */
export function usableCpus(quota = cgroupCpuQuota()): number {
  return Math.min(availableParallelism(), quota ?? Infinity);
}
