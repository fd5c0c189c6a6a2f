// A full, then a read-only state folder: the operator's state lives on a small tmpfs, which fills
// up (then is remounted read-only) while an App is being created. The App says StateUnwritable
// with the file system's words, the log says so, the stack state already there stays whole, and
// everything converges once space (or write access) returns.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Workload } from "../../crds/types.ts";
import { stackName } from "../../operator/pulumi/stack-names.ts";
import { eventually, isNotFound, useCluster } from "../helpers/cluster.ts";
import { startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";

const cluster = useCluster();
const mount = mkdtempSync(join(tmpdir(), "appstack-state-tmpfs-"));
const logs = mkdtempSync(join(tmpdir(), "appstack-state-full-logs-"));
let operator: OperatorProcess | undefined;

before(() => execFileSync("mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", mount]));
after(async () => {
  await operator?.stop();
  execFileSync("umount", [mount]);
  rmSync(mount, { recursive: true, force: true });
  if (process.env["APPSTACK_TEST_LOGS"]) console.error(`operator log kept in ${logs}`);
  else rmSync(logs, { recursive: true, force: true });
});

const checkpoint = (name: string) => join(mount, "backend", ".pulumi", "stacks", "appstack", `${stackName("App", "default", name)}.json`);
const app = (name: string) => ({ kind: "App" as const, metadata: { name, namespace: "default" }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } });

test("a full state folder: StateUnwritable on the object and in the log, no stack state damaged, converges once space returns", async () => {
  const workloads = new Workloads(cluster().cluster.kubeconfig);
  operator = await startOperatorProcess(cluster().cluster.kubeconfig, { stateDir: mount, logDir: logs, env: { APPSTACK_RETRY_MAX_MS: "3000" } });
  await workloads.create(app("roomy"));
  await workloads.ready("App", "default", "roomy");
  const before = readFileSync(checkpoint("roomy"), "utf8");

  // Fill what is left of the tmpfs; dd stops at ENOSPC.
  const filler = join(mount, "filler");
  try {
    execFileSync("dd", ["if=/dev/zero", `of=${filler}`, "bs=64k"], { stdio: "ignore" });
  } catch {
    // "No space left on device": the point.
  }
  await workloads.create(app("cramped"));
  const stalled = await eventually("cramped to say StateUnwritable", async () => {
    const object: Workload = await workloads.get("App", "default", "cramped");
    const condition = object.status?.conditions?.find((c) => c.type === "Stalled" && c.status === "True");
    return condition?.reason === "StateUnwritable" ? condition : undefined;
  }, 60_000).catch(async (error: unknown) => {
    console.error(JSON.stringify((await workloads.get("App", "default", "cramped")).status, null, 2));
    throw error;
  });
  assert.match(stalled.message, /no space left on device/i);
  assert.match(readFileSync(operator.logFile, "utf8"), /StateUnwritable|no space left on device/);
  // The stack that was already there is as it was, and whole.
  assert.equal(readFileSync(checkpoint("roomy"), "utf8"), before);
  assert.ok((JSON.parse(before) as { checkpoint: { latest: { resources: unknown[] } } }).checkpoint.latest.resources.length > 0);

  rmSync(filler);
  const ready = await workloads.ready("App", "default", "cramped", 120_000);
  assert.equal(ready.status?.readyReplicas, 1);
  await workloads.ready("App", "default", "roomy");

  for (const name of ["roomy", "cramped"]) await workloads.delete("App", "default", name);
  for (const name of ["roomy", "cramped"]) {
    await eventually(`${name} gone`, async () => workloads.get("App", "default", name).then(() => undefined, (error: unknown) => (isNotFound(error) ? true : undefined)), 60_000);
    assert.equal(existsSync(checkpoint(name)), false);
  }
});

test("a read-only state folder: StateUnwritable with the file system's words, no stack state damaged, converges once writable", async () => {
  const workloads = new Workloads(cluster().cluster.kubeconfig);
  operator ??= await startOperatorProcess(cluster().cluster.kubeconfig, { stateDir: mount, logDir: logs, env: { APPSTACK_RETRY_MAX_MS: "3000" } });
  await workloads.create(app("steady"));
  await workloads.ready("App", "default", "steady");
  const before = readFileSync(checkpoint("steady"), "utf8");

  execFileSync("mount", ["-o", "remount,ro", mount]);
  try {
    await workloads.create(app("frozen"));
    const stalled = await eventually("frozen to say StateUnwritable", async () => {
      const condition = (await workloads.get("App", "default", "frozen")).status?.conditions?.find((c) => c.type === "Stalled" && c.status === "True");
      return condition?.reason === "StateUnwritable" ? condition : undefined;
    }, 60_000);
    assert.match(stalled.message, /read-only file system/i);
    assert.match(readFileSync(operator.logFile, "utf8"), /read-only file system/);
    assert.equal(readFileSync(checkpoint("steady"), "utf8"), before);
  } finally {
    execFileSync("mount", ["-o", "remount,rw", mount]);
  }
  await workloads.ready("App", "default", "frozen", 120_000);
  for (const name of ["steady", "frozen"]) await workloads.delete("App", "default", name);
  for (const name of ["steady", "frozen"]) {
    await workloads.gone("App", "default", name, 60_000);
    assert.equal(existsSync(checkpoint(name)), false);
  }
});
