// The default concurrency follows the cgroup's CPU quota (a pod's CPU limit), v2 and v1, not the
// node's cores: read from cgroup file systems laid out in a scratch folder as the kernel lays them.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { cgroupCpuQuota, usableCpus } from "../../operator/manager/cpu-quota.ts";
import { defaultConcurrency } from "../../operator/manager/config.ts";

const root = mkdtempSync(join(tmpdir(), "appstack-cgroup-"));
after(() => rmSync(root, { recursive: true, force: true }));

function files(folder: string, contents: Record<string, string>): void {
  mkdirSync(join(root, folder), { recursive: true });
  for (const [name, text] of Object.entries(contents)) writeFileSync(join(root, folder, name), `${text}\n`);
}

test("cgroup v2: cpu.max of the process's own cgroup, rounded up; max is no quota", () => {
  files("kubepods/pod-a/c1", { "cpu.max": "100000 100000" });
  files("kubepods/pod-b/c1", { "cpu.max": "150000 100000" });
  files("kubepods/pod-c/c1", { "cpu.max": "max 100000" });
  files("kubepods/pod-d/c1", { "cpu.max": "20000 100000" });
  assert.equal(cgroupCpuQuota(root, "0::/kubepods/pod-a/c1\n"), 1);
  assert.equal(cgroupCpuQuota(root, "0::/kubepods/pod-b/c1\n"), 2);
  assert.equal(cgroupCpuQuota(root, "0::/kubepods/pod-c/c1\n"), undefined);
  assert.equal(cgroupCpuQuota(root, "0::/kubepods/pod-d/c1\n"), 1, "a fifth of a CPU still runs one engine");
  assert.equal(cgroupCpuQuota(root, "0::/not-there\n"), undefined);
});

test("cgroup v1: cpu.cfs_quota_us over cpu.cfs_period_us of the cpu controller's cgroup; -1 is no quota", () => {
  files("cpu,cpuacct/kubepods/pod-e", { "cpu.cfs_quota_us": "300000", "cpu.cfs_period_us": "100000" });
  files("cpu,cpuacct/kubepods/pod-f", { "cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "100000" });
  assert.equal(cgroupCpuQuota(root, "12:memory:/kubepods/pod-e\n4:cpu,cpuacct:/kubepods/pod-e\n0::/\n"), 3);
  assert.equal(cgroupCpuQuota(root, "4:cpu,cpuacct:/kubepods/pod-f\n0::/\n"), undefined);
});

test("the default concurrency is one more than the CPUs the quota allows, never more than the cores", () => {
  assert.equal(usableCpus(1), 1);
  assert.equal(defaultConcurrency(usableCpus(1)), 2);
  assert.equal(usableCpus(10_000), availableParallelism());
  assert.equal(usableCpus(undefined), availableParallelism());
});
