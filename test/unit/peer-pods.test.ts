// Which other host's stack lock the operator breaks: only one whose holder is proven to be a pod of
// this install (its Deployment's), and that pod proven gone. A stand-in API answers for the pods
// and ReplicaSets of the install's namespace and 404 for every other name, as the API server does
// for a host that never was a pod there: a person's laptop, the install program's own stack.
import type { V1Pod, V1ReplicaSet } from "@kubernetes/client-node";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { createLogger } from "../../operator/base/log.ts";
import { loadConfig, type OperatorConfig } from "../../operator/manager/config.ts";
import { otherHostCheck } from "../../operator/manager/operator.ts";
import { namedBy } from "../../operator/kube/peer-pods.ts";
import { breakAllStaleLocks, breakStaleLocks } from "../../operator/pulumi/stack-locks.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";

const scratch = mkdtempSync(join(tmpdir(), "appstack-peer-pods-"));
after(() => rmSync(scratch, { recursive: true, force: true }));
const log = createLogger({ level: "error" });
const io = new StateIo(60_000);

const podsNamespace = "appstack-system";
const deployment = { apiVersion: "apps/v1", kind: "Deployment", name: "appstack-operator", uid: "deployment-uid", controller: true };
const replicaSet = (name: string, uid: string, owner = deployment): V1ReplicaSet => ({ metadata: { name, uid, namespace: podsNamespace, ownerReferences: [owner] } });
/** The install's current ReplicaSet, an earlier one of its Deployment, and a CI runner's that is no part of it. */
const replicaSets = [
  replicaSet("appstack-operator-5d8f9c7b4", "current-rs"),
  replicaSet("appstack-operator-6c7d8f9b5", "earlier-rs"),
  replicaSet("ci-runner-7f8g9", "ci-rs", { apiVersion: "apps/v1", kind: "Deployment", name: "ci-runner", uid: "ci-uid", controller: true }),
];
const hourAgo = new Date(Date.now() - 3_600_000);
const pod = (name: string, rs: V1ReplicaSet, phase = "Running"): V1Pod => ({
  metadata: { name, namespace: podsNamespace, ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: rs.metadata!.name!, uid: rs.metadata!.uid!, controller: true }] },
  spec: { nodeName: "node-1", containers: [] },
  status: { phase, containerStatuses: phase === "Running" ? [{ name: "operator", image: "x", imageID: "", ready: true, restartCount: 0, state: { running: { startedAt: hourAgo } } }] : [] },
});
const self = pod("appstack-operator-5d8f9c7b4-x7k2m", replicaSets[0]!);
const sibling = pod("appstack-operator-5d8f9c7b4-q9w4z", replicaSets[0]!);
/** A CI job's pod in the same namespace, ended: no pod of this install, whatever its state. */
const ciJob = pod("ci-runner-7f8g9-bcdfg", replicaSets[2]!, "Succeeded");

/** The API as far as the check reads it: pods and ReplicaSets of the pods' namespace; 404 for anything else. */
function standInApi() {
  const asked: string[] = [];
  const notFound = (what: string) => Object.assign(new Error(`HTTP-Code: 404 Message: ${what} not found`), { code: 404 });
  const bare: V1Pod = { metadata: { name: "appstack-bare", namespace: podsNamespace }, spec: { nodeName: "node-1", containers: [] } };
  const pods = new Map([self, sibling, ciJob, bare].map((p) => [`${podsNamespace}/${p.metadata!.name}`, p]));
  return {
    asked,
    core: {
      readNamespacedPod: ({ name, namespace }: { name: string; namespace: string }) => {
        asked.push(`pod ${namespace}/${name}`);
        const found = pods.get(`${namespace}/${name}`);
        return found ? Promise.resolve(found) : Promise.reject(notFound(`pods "${name}"`));
      },
    },
    apps: {
      listNamespacedReplicaSet: ({ namespace }: { namespace: string }) => {
        asked.push(`replicasets ${namespace}`);
        return Promise.resolve({ items: namespace === podsNamespace ? replicaSets : [] });
      },
    },
  };
}

/** The operator's settings in a replica of the install: its pod named by the downward API, its Lease in `leaseNamespace`. */
function replicaConfig(leaseNamespace = podsNamespace): OperatorConfig {
  return loadConfig({}, { APPSTACK_STATE_DIR: join(scratch, "state"), POD_NAME: self.metadata!.name, POD_NAMESPACE: podsNamespace, APPSTACK_LEASE_NAMESPACE: leaseNamespace });
}

/** How the operator wires the check of another host's lock (operator/manager/operator.ts). */
function holderCheck(config: OperatorConfig, api: ReturnType<typeof standInApi>) {
  return otherHostCheck(config, api).otherHost;
}

let backends = 0;
/** A file backend holding `locks` (stack -> the host that took its lock, now), Pulumi's layout. */
function backendWith(locks: Record<string, string>): { url: string; lockOf: (stack: string) => string } {
  const root = join(scratch, `backend-${backends++}`);
  const lockOf = (stack: string) => join(root, ".pulumi", "locks", "organization", "appstack", stack, `${stack}-lock.json`);
  for (const [stack, host] of Object.entries(locks)) {
    mkdirSync(join(lockOf(stack), ".."), { recursive: true });
    writeFileSync(lockOf(stack), JSON.stringify({ pid: 4242, username: "someone", hostname: host, timestamp: new Date().toISOString() }));
  }
  return { url: pathToFileURL(root).href, lockOf };
}

test("a lock taken on a host that is no pod of this install is never broken: a person's laptop, the install program's own stack", async () => {
  const api = standInApi();
  // `appstack stacks refresh` from a laptop, and `pulumi up` of the install program (project appstack too) from a build machine.
  const { url, lockOf } = backendWith({ "app.default.web": "alices-laptop", dev: "build-box", "app.default.job": ciJob.metadata!.name!, "app.default.lookalike": "ci-runner-7f8g9-hjklm" });
  assert.equal(await breakAllStaleLocks(url, "appstack", log, io, holderCheck(replicaConfig(), api)), 0);
  for (const stack of ["app.default.web", "dev", "app.default.job", "app.default.lookalike"]) assert.ok(existsSync(lockOf(stack)), `the lock of ${stack} was broken`);
  const held = await breakStaleLocks(url, "appstack", "app.default.web", log, io, holderCheck(replicaConfig(), api));
  assert.equal(held.removed, false);
  assert.match(held.held ?? "", /on alices-laptop since .*: alices-laptop is no pod of this install \(Deployment appstack-system\/appstack-operator\)/);
});

test("a lock of this install's pod that is gone is broken", async () => {
  const api = standInApi();
  // A pod of the install's earlier ReplicaSet (before a rollout), and one of its current one, both deleted since.
  const { url, lockOf } = backendWith({ "app.default.a": "appstack-operator-6c7d8f9b5-r2t4v", "app.default.b": "appstack-operator-5d8f9c7b4-zz9bb" });
  assert.equal(await breakAllStaleLocks(url, "appstack", log, io, holderCheck(replicaConfig(), api)), 2);
  assert.ok(!existsSync(lockOf("app.default.a")) && !existsSync(lockOf("app.default.b")));
});

test("with its Lease in another namespace than the pods, a replica finds its sibling's pod in the pods' namespace and keeps its lock", async () => {
  const api = standInApi();
  const { url, lockOf } = backendWith({ "app.default.busy": sibling.metadata!.name! });
  const sweep = await breakStaleLocks(url, "appstack", "app.default.busy", log, io, holderCheck(replicaConfig("appstack-leases"), api));
  assert.equal(sweep.removed, false, "the live sibling's lock was broken");
  assert.ok(existsSync(lockOf("app.default.busy")));
  assert.match(sweep.held ?? "", /pod appstack-system\/appstack-operator-5d8f9c7b4-q9w4z still runs/);
  assert.ok(api.asked.includes(`pod ${podsNamespace}/${sibling.metadata!.name}`), api.asked.join(", "));
  assert.ok(!api.asked.some((call) => call.includes("appstack-leases")), `asked the Lease's namespace: ${api.asked.join(", ")}`);
});

test("a pod's name proves its ReplicaSet as the API server generates it: the ReplicaSet's name and '-' cut to 58 characters, then five of its random characters", () => {
  assert.equal(namedBy("appstack-operator-5d8f9c7b4", "appstack-operator-5d8f9c7b4-x7k2m"), true);
  for (const host of ["appstack-operator-5d8f9c7b4", "appstack-operator-5d8f9c7b4-x7k2", "appstack-operator-5d8f9c7b4-x7k2mm", "appstack-operator-5d8f9c7b4-X7K2M", "appstack-operator-5d8f9c7b4-aeiou", "appstack-operator-5d8f9c7b4-x7k2m.local"]) {
    assert.equal(namedBy("appstack-operator-5d8f9c7b4", host), false, host);
  }
  const long = `${"a".repeat(50)}-5d8f9c7b4`;
  assert.equal(namedBy(long, `${long.slice(0, 58)}x7k2m`), true);
  assert.equal(namedBy(long, `${long}-x7k2m`), false);
});

test("a replica whose own pod belongs to no ReplicaSet, or that cannot read it, proves no other host's lock gone", async () => {
  const api = standInApi();
  const { url, lockOf } = backendWith({ "app.default.web": "appstack-operator-6c7d8f9b5-r2t4v" });
  const inPod = (name: string) => loadConfig({}, { APPSTACK_STATE_DIR: join(scratch, "state"), POD_NAME: name, POD_NAMESPACE: podsNamespace });
  const bare = await breakStaleLocks(url, "appstack", "app.default.web", log, io, holderCheck(inPod("appstack-bare"), api));
  assert.match(bare.held ?? "", /this replica's pod appstack-system\/appstack-bare belongs to no ReplicaSet, so no other host is provably a pod of its install; the lock stays/);
  const unread = await breakStaleLocks(url, "appstack", "app.default.web", log, io, holderCheck(inPod("appstack-missing"), api));
  assert.match(unread.held ?? "", /whether appstack-operator-6c7d8f9b5-r2t4v is a pod of this install that is gone cannot be told \(HTTP 404/);
  const outside = loadConfig({}, { APPSTACK_STATE_DIR: join(scratch, "state") });
  assert.equal(holderCheck(outside, api), undefined, "the local run (no pod) judges no other host");
  assert.ok(existsSync(lockOf("app.default.web")));
});
