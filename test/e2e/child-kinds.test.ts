// A kind registered only for this test, whose children include a kind neither App nor Memcached
// makes (a ConfigMap: test/helpers/greeter-kind.ts), run by the operator against a real API
// server: the ConfigMap is created, owned and watched; a hand edit of it and a key added to it are
// repaired; the ownership policy guards ConfigMaps; and the ConfigMap goes with its object. And a
// child kind App declares beside its Deployment and Service: the NetworkPolicy of spec.networkPolicy.
import { greeterKindModule } from "../helpers/greeter-kind.ts";
import assert from "node:assert/strict";
import { test } from "node:test";
import { NetworkingV1Api } from "@kubernetes/client-node";
import { mergePatch } from "../../operator/kube/clients.ts";
import { eventually, isNotFound, useCluster } from "../helpers/cluster.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { disposeOperator, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";

let operator: OperatorProcess | undefined;
const cluster = useCluster(undefined, () => disposeOperator(operator));

test("a kind of the tests gets its ConfigMap child created, its drift repaired, and deleted with its object", async () => {
  const { core } = cluster();
  const kubeconfig = cluster().cluster.kubeconfig;
  // The API installed from this process holds the Greeter's CRD and a policy over ConfigMaps too.
  operator = await startOperatorProcess(kubeconfig, { preload: [greeterKindModule] });
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
  operator ??= await startOperatorProcess(kubeconfig, { preload: [greeterKindModule] });
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
