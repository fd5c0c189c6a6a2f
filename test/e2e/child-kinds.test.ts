// A kind registered only for this test, whose children include a kind neither App nor Memcached
// makes (a ConfigMap: test/helpers/greeter-kind.ts), run by the operator against a real API
// server: the ConfigMap is created, owned and watched; a hand edit of it and a key added to it are
// repaired; the ownership policy guards ConfigMaps; and the ConfigMap goes with its object. A
// child kind App declares beside its Deployment and Service: the NetworkPolicy of spec.networkPolicy.
// And a kind whose children have no rule of appstack's own (test/helpers/stash-kind.ts: a
// PersistentVolumeClaim and a StatefulSet whose pod mounts it), read as kstatus reads them.
import { greeterKindModule } from "../helpers/greeter-kind.ts";
import { stashClaim, stashKindModule } from "../helpers/stash-kind.ts";
import assert from "node:assert/strict";
import { test } from "node:test";
import { AppsV1Api, NetworkingV1Api } from "@kubernetes/client-node";
import { mergePatch } from "../../operator/kube/clients.ts";
import { eventually, isNotFound, useCluster } from "../helpers/cluster.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { disposeOperator, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";

let operator: OperatorProcess | undefined;
const kindModules = [greeterKindModule, stashKindModule];
const cluster = useCluster(undefined, () => disposeOperator(operator));

test("a kind of the tests gets its ConfigMap child created, its drift repaired, and deleted with its object", async () => {
  const { core } = cluster();
  const kubeconfig = cluster().cluster.kubeconfig;
  // The API installed from this process holds the Greeter's CRD and a policy over ConfigMaps too.
  operator = await startOperatorProcess(kubeconfig, { preload: kindModules });
  const workloads = new Workloads(kubeconfig);
  const read = () => core.readNamespacedConfigMap({ name: "hello", namespace: "default" });

  await workloads.create({ kind: "Greeter", metadata: { name: "hello", namespace: "default" }, spec: { image: "nginx:1.27", greeting: "hello, world" } });
  const greeter = await workloads.ready("Greeter", "default", "hello");
  const made = await read();
  assert.deepEqual(made.data, { greeting: "hello, world" });
  assert.deepEqual(made.metadata?.ownerReferences?.map((ref) => `${ref.kind}/${ref.name} ${ref.uid} controller=${ref.controller}`), [`Greeter/hello ${greeter.metadata.uid} controller=true`]);
  assert.equal(made.metadata?.labels?.["app.kubernetes.io/managed-by"], "appstack");

  // A hand edit of the greeting and a key added beside it: drift, seen on the ConfigMap's own watch
  // event and repaired (the added key removed by the repair's apply).
  await core.patchNamespacedConfigMap({ name: "hello", namespace: "default", body: { data: { greeting: "tampered", extra: "1" } } }, mergePatch);
  await eventually("the ConfigMap repaired", async () => {
    const data = (await read()).data;
    return data?.["greeting"] === "hello, world" && !("extra" in data) ? true : undefined;
  });
  await workloads.ready("Greeter", "default", "hello");

  // The ownership policy covers ConfigMaps: nobody makes an existing one an appstack object's.
  await core.createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: "foreign" }, data: { mine: "yes" } } });
  const claim = { metadata: { ownerReferences: [{ apiVersion: "appstack.dev/v1alpha1", kind: "Greeter", name: "hello", uid: greeter.metadata.uid, controller: true }] } };
  await assert.rejects(core.patchNamespacedConfigMap({ name: "foreign", namespace: "default", body: claim }, mergePatch), /appstack does not take over an existing object/);

  // Deleted with its object: the finalizer's destroy removes the ConfigMap before the object goes.
  await workloads.delete("Greeter", "default", "hello");
  await workloads.gone("Greeter", "default", "hello");
  await assert.rejects(read(), isNotFound);
  assert.deepEqual((await core.readNamespacedConfigMap({ name: "foreign", namespace: "default" })).data, { mine: "yes" });
});

test("an App with spec.networkPolicy gets its NetworkPolicy: its pods, its port; a hand edit is repaired, and unsetting the field deletes it", async () => {
  const kubeconfig = cluster().cluster.kubeconfig;
  operator ??= await startOperatorProcess(kubeconfig, { preload: kindModules });
  const networking = loadKubeConfig(kubeconfig).makeApiClient(NetworkingV1Api);
  const workloads = new Workloads(kubeconfig);
  const read = () => networking.readNamespacedNetworkPolicy({ name: "guarded", namespace: "default" });
  const rules = (policy: Awaited<ReturnType<typeof read>>) => JSON.stringify(policy.spec?.ingress?.map((rule) => ({ ports: rule.ports?.map((p) => `${p.protocol}/${p.port}`), from: rule._from })));

  await workloads.create({ kind: "App", metadata: { name: "guarded", namespace: "default" }, spec: { image: "nginx:1.27", port: 80, networkPolicy: {} } });
  const app = await workloads.ready("App", "default", "guarded");
  const made = await read();
  assert.deepEqual(made.spec?.podSelector?.matchLabels, { "app.kubernetes.io/name": "guarded", "app.kubernetes.io/instance": "guarded", "appstack.dev/kind": "App" });
  assert.deepEqual(made.spec?.policyTypes, ["Ingress"]);
  assert.equal(rules(made), JSON.stringify([{ ports: ["TCP/80"], from: [{ podSelector: {} }] }]));
  assert.deepEqual(made.metadata?.ownerReferences?.map((ref) => `${ref.kind}/${ref.name} ${ref.uid}`), [`App/guarded ${app.metadata.uid}`]);

  // A hand edit that opens the pods to every namespace on another port: drift, repaired.
  await networking.patchNamespacedNetworkPolicy({ name: "guarded", namespace: "default", body: { spec: { ingress: [{ ports: [{ protocol: "TCP", port: 8080 }], from: [{ namespaceSelector: {} }] }] } } }, mergePatch);
  await eventually("the NetworkPolicy repaired", async () => (rules(await read()) === JSON.stringify([{ ports: ["TCP/80"], from: [{ podSelector: {} }] }]) ? true : undefined));
  await workloads.ready("App", "default", "guarded");

  // The field unset: the NetworkPolicy goes, the App stays.
  await workloads.mergeSpec("App", "default", "guarded", { networkPolicy: null });
  await workloads.ready("App", "default", "guarded");
  await eventually("the NetworkPolicy deleted", async () => read().then(() => undefined, (error: unknown) => (isNotFound(error) ? true : undefined)));
  await workloads.delete("App", "default", "guarded");
  await workloads.gone("App", "default", "guarded");
});

test("a kind whose children have no rule of appstack's own is Reconciling while kstatus reads its claim InProgress, and Ready only once the claim and the StatefulSet are Current", async () => {
  const { core } = cluster();
  const kubeconfig = cluster().cluster.kubeconfig;
  operator ??= await startOperatorProcess(kubeconfig, { preload: kindModules });
  const apps = loadKubeConfig(kubeconfig).makeApiClient(AppsV1Api);
  const workloads = new Workloads(kubeconfig);
  const readClaim = () => core.readNamespacedPersistentVolumeClaim({ name: "stash", namespace: "default" });

  // No volume offers what the claim asks for: it stays Pending, the pod that mounts it unscheduled, and the object says why.
  await workloads.create({ kind: "Stash", metadata: { name: "stash", namespace: "default" }, spec: { image: "nginx:1.27" } });
  const waiting = await eventually("the Stash Reconciling on its claim", async () => {
    const object = await workloads.get("Stash", "default", "stash");
    const reconciling = object.status?.conditions?.find((c) => c.type === "Reconciling");
    return reconciling?.status === "True" && reconciling.reason === "ChildProgressing" ? object : undefined;
  });
  const said = Object.fromEntries((waiting.status?.conditions ?? []).map((c) => [c.type, `${c.status} ${c.message}`]));
  assert.deepEqual(said, {
    Ready: "False the PersistentVolumeClaim stash is not current yet: PVC is not Bound. phase: Pending",
    Reconciling: "True the PersistentVolumeClaim stash is not current yet: PVC is not Bound. phase: Pending",
    Stalled: "False ",
  });
  assert.equal((await readClaim()).status?.phase, "Pending");
  assert.equal((await apps.readNamespacedStatefulSet({ name: "stash", namespace: "default" })).status?.readyReplicas ?? 0, 0);

  // A volume for the claim: it binds, the pod is scheduled and runs (kwok's stages), and only then is the object Ready.
  const { storage, accessModes, storageClassName } = stashClaim;
  const volume = { metadata: { name: "stash-volume" }, spec: { capacity: { storage }, accessModes: [...accessModes], storageClassName, hostPath: { path: "/tmp/stash" }, claimRef: { namespace: "default", name: "stash" } } };
  await core.createPersistentVolume({ body: volume });
  const ready = await workloads.ready("Stash", "default", "stash");
  assert.equal(ready.status?.conditions?.find((c) => c.type === "Ready")?.message, "every child is current");
  assert.equal((await readClaim()).status?.phase, "Bound");
  assert.equal((await apps.readNamespacedStatefulSet({ name: "stash", namespace: "default" })).status?.readyReplicas, 1);

  await workloads.delete("Stash", "default", "stash");
  await workloads.gone("Stash", "default", "stash");
  await eventually("the claim deleted", async () => readClaim().then(() => undefined, (error: unknown) => (isNotFound(error) ? true : undefined)));
  await core.deletePersistentVolume({ name: "stash-volume" });
});
