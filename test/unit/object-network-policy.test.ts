// spec.networkPolicy under Pulumi's mocks: the exact NetworkPolicy an App or a Memcached registers
// when it asks for one, none when it does not; and the drift check on it as the API server and
// client-node return it.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import type * as pulumi from "@pulumi/pulumi";
import { recordRegistrations, registeredResource, type Registered } from "../helpers/pulumi-mocks.ts";

const registered = await recordRegistrations();

// Imported after setMocks, as the mocks require.
let components: typeof import("../../components/app.ts") & typeof import("../../components/memcached.ts");
let kinds: typeof import("../../components/kinds.ts");
let compare: typeof import("../../operator/controller/compare.ts");
before(async () => {
  components = { ...(await import("../../components/app.ts")), ...(await import("../../components/memcached.ts")) };
  kinds = await import("../../components/kinds.ts");
  compare = await import("../../operator/controller/compare.ts");
});

const owner = (name: string, kind: "App" | "Memcached" = "App") => ({ kind, name, namespace: "team-a", uid: `uid-${name}` });
const networkPolicyType = "kubernetes:networking.k8s.io/v1:NetworkPolicy";

async function settle(resource: pulumi.Resource): Promise<void> {
  await registeredResource(resource);
  await new Promise((resolve) => setTimeout(resolve, 50));
}

function policyOf(name: string): Registered {
  const found = registered.find((r) => r.type === networkPolicyType && r.name === name);
  assert.ok(found, `no NetworkPolicy ${name} registered; got ${registered.map((r) => `${r.type}/${r.name}`).join(", ")}`);
  return found;
}

test("an App with spec.networkPolicy gets a NetworkPolicy named after it: its pods, TCP to its port, from its namespace's pods; ingress only", async () => {
  const app = new components.AppWorkload("web", { owner: owner("web"), spec: { image: "nginx:1.27", replicas: 1, port: 8080, networkPolicy: {} } });
  await settle(app.deployment);
  assert.deepEqual(policyOf("web").inputs, {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: {
      name: "web",
      namespace: "team-a",
      labels: { "app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "web", "appstack.dev/kind": "App", "app.kubernetes.io/managed-by": "appstack" },
      annotations: { "pulumi.com/skipAwait": "true", "pulumi.com/patchForce": "true", "pulumi.com/patchFieldManager": "appstack" },
      ownerReferences: [{ apiVersion: "appstack.dev/v1alpha1", kind: "App", name: "web", uid: "uid-web", controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      podSelector: { matchLabels: { "app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "web", "appstack.dev/kind": "App" } },
      policyTypes: ["Ingress"],
      ingress: [{ ports: [{ protocol: "TCP", port: 8080 }], from: [{ podSelector: {} }] }],
    },
  });
});

test("without spec.networkPolicy there is none (the default); an App without a port gets one that lets nothing in", async () => {
  const plain = new components.AppWorkload("plain", { owner: owner("plain"), spec: { image: "nginx:1.27", replicas: 1, port: 80 } });
  await settle(plain.deployment);
  assert.equal(plain.networkPolicy, undefined);
  assert.ok(!registered.some((r) => r.type === networkPolicyType && r.name === "plain"));
  const worker = new components.AppWorkload("worker", { owner: owner("worker"), spec: { image: "busybox:1.36", replicas: 1, networkPolicy: { from: "AllNamespaces" } } });
  await settle(worker.deployment);
  const spec = (policyOf("worker").inputs as { spec: { policyTypes: string[]; ingress: unknown[] } }).spec;
  assert.deepEqual([spec.policyTypes, spec.ingress], [["Ingress"], []]);
});

test("a Memcached's NetworkPolicy lets in 11211 to its memcached pods; AllNamespaces lets in every namespace's pods", async () => {
  const cache = new components.MemcachedWorkload("cache", { owner: owner("cache", "Memcached"), spec: { size: 3, image: "memcached:1.6", networkPolicy: { from: "AllNamespaces" } } });
  await settle(cache.deployment);
  const spec = (policyOf("cache").inputs as { spec: unknown }).spec;
  assert.deepEqual(spec, {
    podSelector: { matchLabels: { "app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "cache", "appstack.dev/kind": "Memcached" } },
    policyTypes: ["Ingress"],
    ingress: [{ ports: [{ protocol: "TCP", port: 11211 }], from: [{ namespaceSelector: {} }] }],
  });
  const plain = new components.MemcachedWorkload("bare", { owner: owner("bare", "Memcached"), spec: { size: 1, image: "memcached:1.6" } });
  await settle(plain.deployment);
  assert.equal(plain.networkPolicy, undefined);
});

test("the drift check: the NetworkPolicy as stored, its keys in the API server's order, matches; another port or peer is drift", () => {
  const app = { apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name: "web", namespace: "team-a", uid: "uid-web", generation: 1 }, spec: { image: "nginx:1.27", replicas: 1, port: 8080, networkPolicy: { from: "Namespace" } } } as const;
  const child = kinds.childManifests(app as never).find((c) => c.kind === "NetworkPolicy");
  assert.ok(child);
  const manifest = child.manifest as { metadata: object; spec: { podSelector: object } };
  const stored = (ingress: unknown) => ({ metadata: { ...manifest.metadata, uid: "np-uid" }, spec: { ingress, podSelector: manifest.spec.podSelector, policyTypes: ["Ingress"] } });
  assert.deepEqual(compare.differences(child.manifest, stored([{ from: [{ podSelector: {} }], ports: [{ port: 8080, protocol: "TCP" }] }])), []);
  assert.equal(compare.differences(child.manifest, stored([{ from: [{ podSelector: {} }], ports: [{ port: 9090, protocol: "TCP" }] }])).length, 1);
  assert.match(compare.differences(child.manifest, stored([{ from: [{ namespaceSelector: {} }], ports: [{ port: 8080, protocol: "TCP" }] }]))[0] ?? "", /^spec\.ingress: /);
  assert.match(compare.differences(child.manifest, stored(undefined))[0] ?? "", /^spec\.ingress: missing/);
});

test("a child read or listed through ChildObjectApi is the API server's JSON, as a watch event carries it: a NetworkPolicy's from stays from", async (t) => {
  const { silentServer } = await import("../helpers/silent-api-server.ts");
  const { apiClient } = await import("../../operator/kube/clients.ts");
  const { ChildObjectApi } = await import("../../operator/kube/child-apis.ts");
  const { networkPolicyChild } = await import("../../components/child-kind.ts");
  const policy = { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: { name: "web", namespace: "team-a", creationTimestamp: "2026-01-01T00:00:00Z" }, spec: { podSelector: {}, ingress: [{ ports: [{ protocol: "TCP", port: 80 }], from: [{ podSelector: {} }] }] } };
  const server = await silentServer((res, url) => {
    const body = url.pathname.endsWith("/web") ? policy : { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicyList", metadata: { resourceVersion: "1" }, items: [policy] };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
  });
  t.after(() => server.close());
  const objects = apiClient(server.config, ChildObjectApi);
  assert.deepEqual(await objects.readChild(networkPolicyChild, "team-a", "web"), policy);
  assert.deepEqual((await objects.listChildren(networkPolicyChild, "team-a", "app.kubernetes.io/managed-by=appstack")).items, [policy]);
  // An error is still the library's ApiException, with its code.
  const failing = await silentServer((res) => res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ kind: "Status", code: 404, reason: "NotFound" })));
  t.after(() => failing.close());
  await assert.rejects(apiClient(failing.config, ChildObjectApi).readChild(networkPolicyChild, "team-a", "web"), (error: { code?: number }) => error.code === 404);
});
