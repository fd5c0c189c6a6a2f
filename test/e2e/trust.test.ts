// Trust, end to end: the status never calls a child Ready that differs from its spec, every
// out-of-band change to a field appstack sets is seen and repaired (or previewed), and nothing
// appstack did not create for that very object is ever written or deleted. Real engine, real API
// server; every result is read back from the API server.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { promisify } from "node:util";
import type { KubernetesObject, V1Deployment } from "@kubernetes/client-node";
import { podSelector } from "../../components/kinds.ts";
import type { Workload, WorkloadKind } from "../../crds/types.ts";
import type { App } from "../../components/app.ts";
import { eventsOf, eventually, eventWithReason, isNotFound, orUndefined, useCluster } from "../helpers/cluster.ts";
import { holdWrites } from "../helpers/hold.ts";
import { injectEnv } from "../helpers/inject.ts";
import { assertServicesDropped, assertUsersService, takeServiceNames } from "../helpers/taken-names.ts";
import { counterTotal, disposeOperator, metricValue, previewCli, startOperatorProcess, watchOperator, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { httpGet } from "../helpers/http.ts";
import { toolPath } from "../../toolchain/tools.ts";
import { jsonPatch, mergePatch } from "../../operator/kube/clients.ts";

const namespace = "default";
let operator: OperatorProcess | undefined;
let workloads: Workloads;
const scratch = mkdtempSync(join(tmpdir(), "appstack-trust-test-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

// A short resync: the tests below also prove that resyncs of settled objects start no Pulumi process.
const operatorEnv = { APPSTACK_LEADER_ELECT: "false", APPSTACK_RESYNC_SECONDS: "2" };

const cluster = useCluster(
  async ({ cluster: local }) => {
    operator = await startOperatorProcess(local.kubeconfig, { env: operatorEnv });
    workloads = new Workloads(local.kubeconfig);
  },
  () => disposeOperator(operator),
);

const app = (name: string, spec: Record<string, unknown>) => ({ kind: "App" as const, metadata: { name, namespace }, spec });
const execFileAsync = promisify(execFile);

const deployment = (name: string) => orUndefined(() => cluster().apps.readNamespacedDeployment({ name, namespace }));
const service = (name: string) => orUndefined(() => cluster().core.readNamespacedService({ name, namespace }));

function patchDeployment(name: string, body: object, how = jsonPatch) {
  return cluster().apps.patchNamespacedDeployment({ name, namespace, body }, how);
}

function patchService(name: string, body: object, how = jsonPatch) {
  return cluster().core.patchNamespacedService({ name, namespace, body }, how);
}

function readyCondition(object: Workload) {
  return object.status?.conditions?.find((c) => c.type === "Ready");
}

/** An out-of-band edit, how to tell it was undone, and the path our drift report names. */
interface Edit {
  readonly what: string;
  readonly path: RegExp;
  readonly edit: (name: string) => Promise<unknown>;
  readonly restored: (name: string) => Promise<boolean>;
}

const container = (d: V1Deployment | undefined) => d?.spec?.template.spec?.containers[0];

const edits: Edit[] = [
  { what: "replicas", path: /spec\.replicas: 5, want 2/, edit: (n) => patchDeployment(n, { spec: { replicas: 5 } }, mergePatch), restored: async (n) => (await deployment(n))?.spec?.replicas === 2 },
  { what: "image", path: /containers\[app\]\.image/, edit: (n) => patchDeployment(n, [{ op: "replace", path: "/spec/template/spec/containers/0/image", value: "evil:1" }]), restored: async (n) => container(await deployment(n))?.image === "nginx:1.27" },
  { what: "env", path: /env\[MODE\]\.value/, edit: (n) => patchDeployment(n, [{ op: "replace", path: "/spec/template/spec/containers/0/env/0/value", value: "prod" }]), restored: async (n) => container(await deployment(n))?.env?.[0]?.value === "e2e" },
  { what: "container port", path: /ports\[http\]\.containerPort/, edit: (n) => patchDeployment(n, [{ op: "replace", path: "/spec/template/spec/containers/0/ports/0/containerPort", value: 9090 }]), restored: async (n) => container(await deployment(n))?.ports?.some((p) => p.name === "http" && p.containerPort === 8080) === true },
  { what: "managed-by label", path: /labels\[app\.kubernetes\.io\/managed-by\]: missing/, edit: (n) => patchDeployment(n, { metadata: { labels: { "app.kubernetes.io/managed-by": null } } }, mergePatch), restored: async (n) => (await deployment(n))?.metadata?.labels?.["app.kubernetes.io/managed-by"] === "appstack" },
  { what: "skipAwait annotation", path: /annotations\[pulumi\.com\/skipAwait\]: missing/, edit: (n) => patchDeployment(n, { metadata: { annotations: { "pulumi.com/skipAwait": null } } }, mergePatch), restored: async (n) => (await deployment(n))?.metadata?.annotations?.["pulumi.com/skipAwait"] === "true" },
  { what: "Service port", path: /Service .*ports\[http\]\.port: 9999/, edit: (n) => patchService(n, [{ op: "replace", path: "/spec/ports/0/port", value: 9999 }]), restored: async (n) => (await service(n))?.spec?.ports?.[0]?.port === 8080 },
  { what: "Service targetPort", path: /Service .*ports\[http\]\.targetPort: 9090/, edit: (n) => patchService(n, [{ op: "replace", path: "/spec/ports/0/targetPort", value: 9090 }]), restored: async (n) => (await service(n))?.spec?.ports?.[0]?.targetPort === "http" },
  { what: "Service type", path: /Service .*spec\.type: "NodePort"/, edit: (n) => patchService(n, { spec: { type: "NodePort" } }, mergePatch), restored: async (n) => (await service(n))?.spec?.type === "ClusterIP" },
];

const editedSpec = { image: "nginx:1.27", replicas: 2, port: 8080, env: [{ name: "MODE", value: "e2e" }], resources: { requests: { cpu: "0.5", memory: "64Mi" } } };

test("a child changed in the window right after `up` wrote it is repaired, not recorded as applied", async () => {
  // The engine creates the Deployment and the Service in parallel: with the Service's create held,
  // the Deployment exists and `up` has not returned. The edit lands in exactly that window.
  const hold = await holdWrites(cluster().cluster, "services", "CREATE", namespace, "window");
  await workloads.create(app("window", { image: "nginx:1.27", replicas: 2, port: 80 }));
  await hold.held;
  await eventually("the Deployment to be created", () => deployment("window"));
  await patchDeployment("window", { spec: { replicas: 5 } }, mergePatch);
  await hold.release();
  await eventWithReason(cluster().core, namespace, "window", "DriftRepaired", (m) => /spec\.replicas: 5, want 2/.test(m));
  const ready = await workloads.ready("App", namespace, "window");
  assert.equal((await deployment("window"))?.spec?.replicas, 2);
  assert.equal(ready.status?.readyReplicas, 2);
});

test("out-of-band edits of every field appstack sets are repaired under updatePolicy Auto", async () => {
  await workloads.create(app("edited", editedSpec));
  await workloads.ready("App", namespace, "edited");
  for (const { what, path, edit, restored } of edits) {
    await edit("edited");
    await eventually(`${what} to be repaired`, async () => ((await restored("edited")) ? true : undefined));
    await eventWithReason(cluster().core, namespace, "edited", "DriftRepaired", (m) => path.test(m));
    await workloads.ready("App", namespace, "edited");
  }
  // Without its label the Deployment left the watch; it was repaired in place, never duplicated.
  const all = await cluster().apps.listNamespacedDeployment({ namespace, labelSelector: "app.kubernetes.io/instance=edited" });
  assert.equal(all.items.length, 1);
});

/**
 * The pinned kubectl against the test cluster, as a person types it (its own field managers:
 * kubectl-set, kubectl-patch, ...). Asynchronous: the admission webhook of holdWrites answers from
 * this process.
 */
async function kubectl(...args: string[]): Promise<string> {
  const kubeCache = join(scratch, "kube-cache");
  const { stdout } = await execFileAsync(toolPath("kubectl"), [`--kubeconfig=${cluster().cluster.kubeconfig}`, `--namespace=${namespace}`, ...args], { encoding: "utf8", timeout: 30_000, env: { PATH: process.env["PATH"] ?? "", KUBECACHEDIR: kubeCache } });
  return stdout;
}

/** An addition made with kubectl, the line that names it in the Event, and how to tell it is gone from the live Deployment. */
interface Addition {
  readonly what: string;
  readonly args: readonly string[];
  readonly named: RegExp;
  readonly gone: (live: V1Deployment) => boolean;
}

const additions: Addition[] = [
  { what: "kubectl set env", args: ["set", "env", "deployment/added", "EXTRA=1"], named: /spec\.template\.spec\.containers\[app\]\.env\[EXTRA\]: added by kubectl-set/, gone: (d) => !container(d)?.env?.some((e) => e.name === "EXTRA") },
  { what: "a second container", args: ["patch", "deployment/added", "--type=json", "-p", JSON.stringify([{ op: "add", path: "/spec/template/spec/containers/-", value: { name: "sidecar", image: "envoy:1" } }])], named: /spec\.template\.spec\.containers\[sidecar\]: added by kubectl-patch/, gone: (d) => d.spec?.template.spec?.containers.length === 1 },
  { what: "a command", args: ["patch", "deployment/added", "--type=json", "-p", JSON.stringify([{ op: "add", path: "/spec/template/spec/containers/0/command", value: ["sh", "-c", "sleep 1d"] }])], named: /spec\.template\.spec\.containers\[app\]\.command: added by kubectl-patch/, gone: (d) => container(d)?.command === undefined },
  { what: "hostNetwork", args: ["patch", "deployment/added", "--type=merge", "-p", JSON.stringify({ spec: { template: { spec: { hostNetwork: true } } } })], named: /spec\.template\.spec\.hostNetwork: added by kubectl-patch/, gone: (d) => !d.spec?.template.spec?.hostNetwork && !container(d)?.ports?.some((p) => p.hostPort !== undefined) },
  { what: "serviceAccountName", args: ["set", "serviceaccount", "deployment/added", "default"], named: /spec\.template\.spec\.serviceAccountName: added by kubectl-set/, gone: (d) => d.spec?.template.spec?.serviceAccountName === undefined && d.spec?.template.spec?.serviceAccount === undefined },
  { what: "kubectl rollout pause", args: ["rollout", "pause", "deployment/added"], named: /spec\.paused: added by kubectl-rollout/, gone: (d) => !d.spec?.paused },
];

test("what a person adds to the pod template is drift: named in DriftRepaired, removed, Ready again; a restart, the API server's defaults and a webhook's are not", async () => {
  // A mutating webhook injects an env var into its Deployment on every write, whoever writes.
  const injector = await injectEnv(cluster().cluster, namespace, "added", { name: "INJECTED", value: "1" });
  try {
    await addedAndRemoved();
  } finally {
    await injector.remove();
  }
});

/** The test above, under the injecting webhook. */
async function addedAndRemoved() {
  await workloads.create(app("added", editedSpec));
  // A Memcached beside it: its args, probe and resources are no addition either.
  await workloads.create({ kind: "Memcached", metadata: { name: "added-cache", namespace }, spec: { size: 1 } });
  await workloads.ready("App", namespace, "added");
  await workloads.ready("Memcached", namespace, "added-cache");
  // `kubectl rollout restart` stamps the pod template: new pods, nothing else, and no drift.
  await kubectl("rollout", "restart", "deployment/added");
  await eventually("the restart to roll out", async () => {
    const live = await deployment("added");
    const done = live?.spec?.template.metadata?.annotations?.["kubectl.kubernetes.io/restartedAt"] && (live.status?.observedGeneration ?? 0) >= (live.metadata?.generation ?? 1) && live.status?.updatedReplicas === 2 && live.status.replicas === 2;
    return done ? true : undefined;
  });
  // Two resyncs over the settled objects: no repair (a loop over defaults or the restart would start Pulumi).
  const quiet = await watchOperator(operator!, async () => {
    const resyncs = async () => counterTotal((await httpGet(`http://127.0.0.1:${operator!.healthPort}/metrics`)).body, "appstack_resync_total");
    const start = await resyncs();
    await eventually("two resyncs", async () => ((await resyncs()) >= start + 2 ? true : undefined));
  });
  assert.equal(quiet.pulumiProcesses, 0);
  for (const name of ["added", "added-cache"]) assert.deepEqual((await eventsOf(cluster().core, namespace, name)).map((e) => e.reason).filter((reason) => /Drift/.test(reason ?? "")), [], name);
  await workloads.delete("Memcached", namespace, "added-cache");
  const before = (await deployment("added"))!;
  assert.deepEqual(container(before)?.env?.map((e) => e.name), ["MODE", "INJECTED"], "the webhook's env var is there, and no drift");

  for (const { what, args, named, gone } of additions) {
    const readySince = readyCondition(await workloads.get("App", namespace, "added"))?.lastTransitionTime;
    // The pause is held at the repair's write: meanwhile the App says why it is not Ready.
    const hold = what === "kubectl rollout pause" ? await holdWrites(cluster().cluster, "deployments", "UPDATE", namespace, "added", /^appstack$/) : undefined;
    await kubectl(...args);
    if (hold) {
      await hold.held;
      const during = readyCondition(await workloads.get("App", namespace, "added"));
      assert.deepEqual([during?.status, during?.reason], ["False", "RepairingDrift"], what);
      assert.match(during?.message ?? "", named, what);
      await hold.release();
    }
    await eventWithReason(cluster().core, namespace, "added", "DriftRepaired", (m) => named.test(m));
    const ready = await workloads.ready("App", namespace, "added");
    assert.ok(Date.parse(readyCondition(ready)!.lastTransitionTime) > Date.parse(readySince!), `${what}: the App left Ready`);
    const live = (await deployment("added"))!;
    assert.ok(gone(live), `${what}: still in ${JSON.stringify(live.spec)}`);
  }
  // Every addition gone, nothing else changed: the pod template (with the restart stamp) is as before.
  const after = (await deployment("added"))!;
  assert.deepEqual(JSON.parse(JSON.stringify(after.spec)), JSON.parse(JSON.stringify(before.spec)));
  await workloads.delete("App", namespace, "added");
}

test("out-of-band edits are previewed under updatePolicy Preview and repaired only when approved", async () => {
  await workloads.create(app("gated", { ...editedSpec, updatePolicy: "Preview" }));
  let { preview } = await workloads.previewOf("App", namespace, "gated");
  await workloads.approve("App", namespace, "gated", preview.planId);
  await workloads.ready("App", namespace, "gated");
  for (const { what, path, edit, restored } of edits) {
    await edit("gated");
    const previous = preview.planId;
    ({ preview } = await workloads.previewOf("App", namespace, "gated", previous));
    assert.match(preview.reason, path, what);
    assert.ok(preview.steps.some((s) => s.step === "update" || s.step === "replace"), `${what}: ${JSON.stringify(preview.steps)}`);
    const waiting = await workloads.get("App", namespace, "gated");
    assert.equal(readyCondition(waiting)?.status, "False", what);
    assert.equal(readyCondition(waiting)?.reason, "AwaitingApproval", what);
    assert.equal(await restored("gated"), false, `${what} must wait for the approval`);
    await workloads.approve("App", namespace, "gated", preview.planId);
    await eventually(`${what} to be repaired once approved`, async () => ((await restored("gated")) ? true : undefined));
    await workloads.ready("App", namespace, "gated");
  }
  // An addition, which Pulumi's own plan cannot see: the plan names it, and only the approval removes it.
  const extra = async () => container(await deployment("gated"))?.env?.some((e) => e.name === "EXTRA");
  await kubectl("set", "env", "deployment/gated", "EXTRA=1");
  ({ preview } = await workloads.previewOf("App", namespace, "gated", preview.planId));
  assert.match(preview.reason, /containers\[app\]\.env\[EXTRA\]: added by kubectl-set/);
  assert.deepEqual(preview.steps.filter((s) => s.step !== "same").map((s) => [s.type, s.step, s.paths]), [["kubernetes:apps/v1:Deployment", "update", ["spec.template.spec.containers[app].env[EXTRA]"]]]);
  assert.equal(readyCondition(await workloads.get("App", namespace, "gated"))?.reason, "AwaitingApproval");
  assert.equal(await extra(), true, "the addition must wait for the approval");
  await workloads.approve("App", namespace, "gated", preview.planId);
  await eventually("the addition to be removed once approved", async () => ((await extra()) === false ? true : undefined));
  await eventWithReason(cluster().core, namespace, "gated", "PlanApplied", (m) => m.includes(preview.planId));
  await workloads.ready("App", namespace, "gated");
});

test("while its Deployment disagrees with it, an App is never Ready", async () => {
  // The repair's write is held: the Deployment says 5 replicas for as long as the test wants.
  const hold = await holdWrites(cluster().cluster, "deployments", "UPDATE", namespace, "window", /^appstack$/);
  await patchDeployment("window", { spec: { replicas: 5 } }, mergePatch);
  await hold.held;
  const seen: string[] = [];
  for (let i = 0; i < 15; i++) {
    const object = await workloads.get("App", namespace, "window");
    const ready = readyCondition(object);
    seen.push(`${ready?.status}/${ready?.reason}`);
    assert.notEqual(ready?.status, "True", `Ready while the Deployment has ${(await deployment("window"))?.spec?.replicas} replicas`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const during = readyCondition(await workloads.get("App", namespace, "window"));
  assert.equal(during?.reason, "RepairingDrift", seen.join(", "));
  assert.match(during?.message ?? "", /spec\.replicas: 5, want 2/);
  await hold.release();
  await workloads.ready("App", namespace, "window");
  assert.equal((await deployment("window"))?.spec?.replicas, 2);
});

test("quantities the API server rewrites are no drift: an App asking for them becomes Ready, with them stored", async () => {
  // Stored as "1m" (core/v1 rounds every resource quantity up to milli), "2", "9m" and
  // "1181116006400m": as floats 0.009 and 9 × 0.001 differ, and such an App was drift repaired
  // for ever; so was one finer than milli.
  const resources = { requests: { cpu: "0.0000000001", memory: 2 }, limits: { cpu: "0.009", memory: "1.1Gi" } };
  await workloads.create({ kind: "App", metadata: { name: "quantities", namespace }, spec: { image: "nginx:1.27", replicas: 1, resources } });
  await workloads.ready("App", namespace, "quantities");
  const stored = (await deployment("quantities"))?.spec?.template.spec?.containers[0]?.resources;
  assert.deepEqual(JSON.parse(JSON.stringify(stored)), { requests: { cpu: "1m", memory: "2" }, limits: { cpu: "9m", memory: "1181116006400m" } });
  assert.deepEqual((await eventsOf(cluster().core, namespace, "quantities")).map((e) => e.reason).filter((reason) => /Drift/.test(reason ?? "")), []);
  await workloads.delete("App", namespace, "quantities");
});

/** What must not change about an object appstack does not own: who wrote it and what it says. */
function fingerprint(object: KubernetesObject & { spec?: unknown }) {
  const { labels, annotations, ownerReferences, managedFields } = object.metadata ?? {};
  return { labels, annotations, ownerReferences, spec: object.spec, managers: (managedFields ?? []).map((f) => `${f.manager}/${f.operation}/${f.subresource ?? ""}`).sort() };
}

async function expectConflict(kind: WorkloadKind, name: string, names: RegExp): Promise<Workload> {
  const stalled = await workloads.condition(kind, namespace, name, "Stalled", "True");
  const condition = stalled.status?.conditions?.find((c) => c.type === "Stalled");
  assert.equal(condition?.reason, "ResourceConflict");
  assert.match(condition?.message ?? "", names);
  assert.equal(readyCondition(stalled)?.status, "False");
  await eventWithReason(cluster().core, namespace, name, "ResourceConflict", (m) => names.test(m));
  return stalled;
}

test("a user's Deployment and Service of the same name are left alone: ResourceConflict, and still there after the App goes", async () => {
  const labels = { app: "mine", owner: "dba" };
  await cluster().apps.createNamespacedDeployment({ namespace, body: { metadata: { name: "mine", labels }, spec: { replicas: 1, selector: { matchLabels: { app: "mine" } }, template: { metadata: { labels }, spec: { containers: [{ name: "db", image: "postgres:17" }] } } } } });
  await cluster().core.createNamespacedService({ namespace, body: { metadata: { name: "mine", labels }, spec: { selector: { app: "mine" }, ports: [{ port: 5432 }] } } });
  await eventually("the user's Deployment to have its pod", async () => ((await deployment("mine"))?.status?.readyReplicas === 1 ? true : undefined));
  const before = { deployment: fingerprint((await deployment("mine"))!), service: fingerprint((await service("mine"))!) };

  await workloads.create(app("mine", { image: "nginx:1.27", replicas: 3, port: 80 }));
  const stalled = await expectConflict("App", "mine", /Deployment default\/mine .*Service default\/mine|Service default\/mine .*Deployment default\/mine/);
  assert.equal(stalled.status?.readyReplicas ?? 0, 0, "the status must not read the user's Deployment");
  // The window between the operator's check and the engine's write is closed by the API server:
  // a write that would make the user's object the App's is refused, whoever sends it.
  const claim = { metadata: { ownerReferences: [{ apiVersion: "appstack.dev/v1alpha1", kind: "App", name: "mine", uid: stalled.metadata.uid, controller: true }] } };
  await assert.rejects(patchDeployment("mine", claim, mergePatch), /appstack does not take over an existing object/);
  await assert.rejects(patchService("mine", claim, mergePatch), /appstack does not take over an existing object/);
  await workloads.delete("App", namespace, "mine");
  await workloads.gone("App", namespace, "mine");
  assert.deepEqual({ deployment: fingerprint((await deployment("mine"))!), service: fingerprint((await service("mine"))!) }, before);
});

test("a Deployment whose selector and labels copy appstack's is still someone else's", async () => {
  const owner = { apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name: "lookalike", namespace, uid: "" }, spec: { image: "x", replicas: 1 } } as App;
  const labels = { ...podSelector(owner), "app.kubernetes.io/managed-by": "appstack" };
  await cluster().apps.createNamespacedDeployment({ namespace, body: { metadata: { name: "lookalike", labels }, spec: { replicas: 1, selector: { matchLabels: podSelector(owner) }, template: { metadata: { labels }, spec: { containers: [{ name: "app", image: "busybox:1.36" }] } } } } });
  // The Deployment controller's own first write (its revision annotation) comes before the snapshot.
  await eventually("the user's Deployment to have its pod", async () => ((await deployment("lookalike"))?.status?.readyReplicas === 1 ? true : undefined));
  const before = fingerprint((await deployment("lookalike"))!);
  await workloads.create(app("lookalike", { image: "nginx:1.27", replicas: 2 }));
  await expectConflict("App", "lookalike", /Deployment default\/lookalike \(not created by appstack\)/);
  await workloads.delete("App", namespace, "lookalike");
  await workloads.gone("App", namespace, "lookalike");
  assert.deepEqual(fingerprint((await deployment("lookalike"))!), before);
});

test("a user's Service that took a deleted child's name is never deleted through the stack's state: not by `up` once the spec drops it, not by `destroy`", async () => {
  const names = ["taken-up", "taken-destroy"];
  for (const name of names) await workloads.create(app(name, { image: "nginx:1.27", replicas: 1, port: 80 }));
  for (const name of names) await workloads.ready("App", namespace, name);
  // With the operator stopped, nothing repairs the deleted Services before the user's take their names.
  const { stateDir } = operator!;
  await operator!.stop();
  const theirs = await takeServiceNames(cluster().core, namespace, names);
  // The spec no longer wants a Service, so no check of the wanted children sees the user's; the
  // stacks still record the Services they made.
  for (const name of names) await workloads.mergeSpec("App", namespace, name, { port: null });
  await workloads.delete("App", namespace, "taken-destroy");
  operator = await startOperatorProcess(cluster().cluster.kubeconfig, { stateDir, env: operatorEnv });

  await workloads.ready("App", namespace, "taken-up");
  await workloads.gone("App", namespace, "taken-destroy");
  await assertServicesDropped(cluster().core, namespace, theirs);
  // The App's own child went with it.
  assert.equal(await deployment("taken-destroy"), undefined);
  // Out of the stack's state for good: the next destroy leaves it alone too.
  await workloads.delete("App", namespace, "taken-up");
  await workloads.gone("App", namespace, "taken-up");
  await assertUsersService(cluster().core, namespace, "taken-up", theirs.get("taken-up"));
  for (const name of names) await cluster().core.deleteNamespacedService({ name, namespace });
});

test("an App and a Memcached of one name: the first keeps the children, the second reports ResourceConflict", async () => {
  await workloads.create(app("twin", { image: "nginx:1.27", replicas: 1, port: 80 }));
  await workloads.ready("App", namespace, "twin");
  const before = { deployment: fingerprint((await deployment("twin"))!), service: fingerprint((await service("twin"))!) };
  await workloads.create({ kind: "Memcached", metadata: { name: "twin", namespace }, spec: { size: 2 } });
  const stalled = await expectConflict("Memcached", "twin", /controlled by App\/twin/);
  assert.equal(stalled.status?.readyReplicas ?? 0, 0, "the Memcached must not read the App's Deployment");
  assert.deepEqual((stalled.status as { nodes?: string[] }).nodes ?? [], []);
  await workloads.delete("Memcached", namespace, "twin");
  await workloads.gone("Memcached", namespace, "twin");
  assert.deepEqual({ deployment: fingerprint((await deployment("twin"))!), service: fingerprint((await service("twin"))!) }, before);
  await workloads.ready("App", namespace, "twin");
});

test("a reconcile that fails outside Pulumi is logged, counted by reason and shown on the object", async () => {
  const { AdmissionregistrationV1Api } = await import("@kubernetes/client-node");
  const { loadKubeConfig } = await import("../../toolchain/cluster/readiness.ts");
  const admission = loadKubeConfig(cluster().cluster.kubeconfig).makeApiClient(AdmissionregistrationV1Api);
  await workloads.create(app("muzzled", { image: "nginx:1.27", replicas: 1 }));
  await workloads.ready("App", namespace, "muzzled");
  // The API server refuses the operator's status writes for this one object.
  await admission.createValidatingAdmissionPolicy({ body: { metadata: { name: "muzzle" }, spec: { failurePolicy: "Fail", matchConstraints: { resourceRules: [{ apiGroups: ["appstack.dev"], apiVersions: ["*"], operations: ["UPDATE"], resources: ["apps/status"] }] }, validations: [{ expression: "object.metadata.name != 'muzzled'", message: "status writes of muzzled are refused by the test" }] } } });
  await admission.createValidatingAdmissionPolicyBinding({ body: { metadata: { name: "muzzle" }, spec: { policyName: "muzzle", validationActions: ["Deny"] } } });
  const { custom } = (await import("../../operator/kube/clients.ts")).kubeClients(cluster().cluster.kubeconfig);
  await eventually("the policy to be in force", async () => {
    const refused = await custom.patchNamespacedCustomObjectStatus({ group: "appstack.dev", version: "v1alpha1", plural: "apps", namespace, name: "muzzled", body: [{ op: "add", path: "/status/replicas", value: 1 }], dryRun: "All" }, jsonPatch).then(() => false, () => true);
    return refused || undefined;
  });
  await workloads.mergeSpec("App", namespace, "muzzled", { replicas: 2 });
  const event = await eventWithReason(cluster().core, namespace, "muzzled", "ReconcileFailed");
  assert.match(event.message ?? "", /status writes of muzzled are refused by the test/);
  const reason = /^(\w+):/.exec(event.message ?? "")?.[1] ?? "";
  assert.notEqual(reason, "InternalError");
  const logged = readFileSync(operator!.logFile, "utf8").split("\n").filter((line) => line.includes('"reconcile failed"') && line.includes("App/default/muzzled"));
  assert.ok(logged.length >= 1 && /refused by the test/.test(logged[0]!), "the failure must be logged with the object and the error");
  const metrics = (await httpGet(`http://127.0.0.1:${operator!.healthPort}/metrics`)).body;
  assert.ok((metricValue(metrics, "appstack_reconcile_errors_total", { kind: "App", reason }) ?? 0) >= 1, metrics.split("\n").filter((l) => l.includes("errors_total")).join("\n"));
  await admission.deleteValidatingAdmissionPolicyBinding({ name: "muzzle" });
  await admission.deleteValidatingAdmissionPolicy({ name: "muzzle" });
  const ready = await workloads.ready("App", namespace, "muzzled");
  assert.equal(ready.status?.readyReplicas, 2);
});

test("a resync over many settled objects, and a reconcile of an annotated one, start no Pulumi process", async () => {
  const names = Array.from({ length: 10 }, (_, i) => `settled-${i}`);
  await Promise.all(names.map((name) => workloads.create(app(name, { image: "nginx:1.27", replicas: 1, port: 80, resources: { requests: { cpu: "0.25", memory: "0.5Gi" } } }))));
  for (const name of names) await workloads.ready("App", namespace, name);
  const objects = (await workloads.list("App", namespace)).length + (await workloads.list("Memcached", namespace)).length;
  const seen = await watchOperator(operator!, async () => {
    await workloads.merge("App", namespace, "settled-0", { metadata: { annotations: { "example.com/note": "looked at" } } });
    await new Promise((resolve) => setTimeout(resolve, 7_000));
  });
  assert.ok(seen.resyncs >= 3, `resyncs: ${seen.resyncs}`);
  // The last resync's reconciles may still be running when the window closes.
  assert.ok(seen.reconciles >= (seen.resyncs - 1) * objects, `reconciles: ${seen.reconciles} for ${objects} objects`);
  assert.equal(seen.pulumiProcesses, 0);
  assert.equal(seen.operations, 0);
  console.error(`resync: ${seen.resyncs} resyncs, ${seen.reconciles} reconciles of ${objects} objects, ${seen.pulumiProcesses} Pulumi processes`);
});

test("an object re-created under the same name while its old stack survives converges; a preview of it shows creates", async () => {
  await workloads.create(app("phoenix", { image: "nginx:1.27", replicas: 1, port: 80 }));
  await workloads.ready("App", namespace, "phoenix");
  // The object goes while no operator runs and without its finalizer (as in a cluster rebuilt
  // from manifests, or a finalizer removed by hand): its stack still records the children.
  await operator!.stop();
  await workloads.merge("App", namespace, "phoenix", { metadata: { finalizers: null } });
  await workloads.delete("App", namespace, "phoenix").catch((error: unknown) => assert.ok(isNotFound(error)));
  await workloads.gone("App", namespace, "phoenix");
  await eventually("the garbage collector to delete the children", async () => (!(await deployment("phoenix")) && !(await service("phoenix")) ? true : undefined));

  const object = { apiVersion: "appstack.dev/v1alpha1", ...app("phoenix", { image: "nginx:1.27", replicas: 1, port: 80 }) };
  const previewed = previewCli({ kubeconfig: cluster().cluster.kubeconfig, stateDir: operator!.stateDir, scratch }, [object], "--json");
  assert.equal(previewed.status, 2, previewed.stderr);
  const result = JSON.parse(previewed.stdout) as { objects: { new: boolean; steps: { type: string; step: string }[] }[] };
  const steps = result.objects[0]!.steps.filter((s) => s.type.startsWith("kubernetes:apps") || s.type.startsWith("kubernetes:core"));
  assert.deepEqual(steps.map((s) => s.step).sort(), ["create", "create"], JSON.stringify(result));

  await workloads.create(app("phoenix", { image: "nginx:1.27", replicas: 1, port: 80 }));
  operator = await startOperatorProcess(cluster().cluster.kubeconfig, { stateDir: operator!.stateDir, env: operatorEnv });
  const ready = await workloads.ready("App", namespace, "phoenix");
  assert.equal(ready.status?.readyReplicas, 1);
  assert.ok(await service("phoenix"));
});
