// The components under Pulumi's mocks: the exact Deployment and Service inputs they register.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import type * as pulumi from "@pulumi/pulumi";
import { recordRegistrations, registeredResource, type Registered } from "../helpers/pulumi-mocks.ts";
import { appDeployment, memcachedDeployment } from "../../components/manifests.ts";
import type { AppSpec } from "../../components/app.ts";

const registered = await recordRegistrations();

// Imported after setMocks, as the mocks require.
let components: typeof import("../../components/app.ts") & typeof import("../../components/memcached.ts");
before(async () => {
  components = { ...(await import("../../components/app.ts")), ...(await import("../../components/memcached.ts")) };
});

const owner = (name: string, kind: "App" | "Memcached" = "App") => ({ kind, name, namespace: "team-a", uid: `uid-${name}` });

async function settle(resource: pulumi.Resource): Promise<void> {
  await registeredResource(resource);
  await new Promise((resolve) => setTimeout(resolve, 50));
}

function byType(type: string, name: string): Registered {
  const found = registered.find((r) => r.type === type && r.name === name);
  assert.ok(found, `no ${type} ${name} registered; got ${registered.map((r) => `${r.type}/${r.name}`).join(", ")}`);
  return found;
}

test("an App with a port becomes a Deployment and a Service with explicit, unique labels", async () => {
  const spec: AppSpec = {
    image: "nginx:1.27",
    replicas: 3,
    port: 8080,
    env: [{ name: "MODE", value: "prod" }],
    resources: { requests: { cpu: "100m" }, limits: { memory: "128Mi" } },
  };
  const app = new components.AppWorkload("web", { owner: owner("web"), spec });
  await settle(app.deployment);
  const labels = {
    "app.kubernetes.io/name": "web",
    "app.kubernetes.io/instance": "web",
    "appstack.dev/kind": "App",
    "app.kubernetes.io/managed-by": "appstack",
  };
  const selector = { "app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "web", "appstack.dev/kind": "App" };
  assert.equal(byType("appstack:apps:App", "web").type, "appstack:apps:App");
  assert.deepEqual(byType("kubernetes:apps/v1:Deployment", "web").inputs, {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: {
      name: "web",
      namespace: "team-a",
      labels,
      annotations: { "pulumi.com/skipAwait": "true", "pulumi.com/patchForce": "true", "pulumi.com/patchFieldManager": "appstack" },
      ownerReferences: [{ apiVersion: "appstack.dev/v1alpha1", kind: "App", name: "web", uid: "uid-web", controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      replicas: 3,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels },
        spec: {
          automountServiceAccountToken: false,
          containers: [
            {
              name: "app",
              image: "nginx:1.27",
              ports: [{ name: "http", containerPort: 8080, protocol: "TCP" }],
              readinessProbe: { tcpSocket: { port: "http" }, periodSeconds: 2, timeoutSeconds: 1, failureThreshold: 3 },
              env: [{ name: "MODE", value: "prod" }],
              resources: { requests: { cpu: "100m" }, limits: { memory: "128Mi" } },
            },
          ],
        },
      },
    },
  });
  const service = byType("kubernetes:core/v1:Service", "web").inputs as { spec: unknown; metadata: { labels: unknown } };
  assert.deepEqual(service.spec, { type: "ClusterIP", selector, ports: [{ name: "http", port: 8080, targetPort: "http", protocol: "TCP" }] });
  assert.deepEqual(service.metadata.labels, labels);
});

test("an App without a port has no Service and a bare container", async () => {
  const app = new components.AppWorkload("worker", { owner: owner("worker"), spec: { image: "busybox:1.36", replicas: 1 } });
  await settle(app.deployment);
  assert.equal(app.service, undefined);
  assert.ok(!registered.some((r) => r.type === "kubernetes:core/v1:Service" && r.name === "worker"));
  const deployment = byType("kubernetes:apps/v1:Deployment", "worker").inputs as { spec: { template: { spec: { containers: unknown[] } } } };
  assert.deepEqual(deployment.spec.template.spec.containers, [{ name: "app", image: "busybox:1.36" }]);
});

test("podSecurity: an App runs as its image says unless Restricted; a Baseline Memcached leaves its user to the image", () => {
  const podSpec = (deployment: ReturnType<typeof appDeployment>) => (deployment.spec as { template: { spec: { securityContext?: unknown; containers: { securityContext?: unknown }[] } } }).template.spec;
  const plain = podSpec(appDeployment(owner("a"), { image: "nginx:1.27", replicas: 1 }));
  assert.deepEqual([plain.securityContext, plain.containers[0]?.securityContext], [undefined, undefined]);
  const restricted = podSpec(appDeployment(owner("a"), { image: "web:1", replicas: 1, podSecurity: { profile: "Restricted" } }));
  assert.deepEqual(restricted.securityContext, { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
  assert.deepEqual(restricted.containers[0]?.securityContext, { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } });
  const asUser = podSpec(appDeployment(owner("a"), { image: "web:1", replicas: 1, podSecurity: { profile: "Restricted", runAsUser: 10001 } }));
  assert.deepEqual(asUser.securityContext, { runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: "RuntimeDefault" } });
  const baseline = podSpec(memcachedDeployment(owner("m", "Memcached"), { size: 1, image: "memcached:1.6", podSecurity: { profile: "Baseline" } }));
  // Its root stays read-only: memcached writes no file under any profile.
  assert.deepEqual([baseline.securityContext, baseline.containers[0]?.securityContext], [undefined, { readOnlyRootFilesystem: true }]);
});

test("an App's pods get no API token unless its spec asks for one", () => {
  const automount = (spec: AppSpec) => (appDeployment(owner("a"), spec).spec as { template: { spec: { automountServiceAccountToken?: boolean } } }).template.spec.automountServiceAccountToken;
  assert.equal(automount({ image: "nginx:1.27", replicas: 1 }), false);
  assert.equal(automount({ image: "controller:1", replicas: 1, automountServiceAccountToken: true }), true);
  assert.equal(automount({ image: "nginx:1.27", replicas: 1, automountServiceAccountToken: false }), false);
});

test("readinessProbe: an App with a port is probed on it by TCP unless its spec asks for HTTP or None; without a port, never", () => {
  const probe = (spec: AppSpec) => ((appDeployment(owner("a"), spec).spec as { template: { spec: { containers: { readinessProbe?: unknown }[] } } }).template.spec.containers[0]?.readinessProbe);
  const timing = { periodSeconds: 2, timeoutSeconds: 1, failureThreshold: 3 };
  assert.deepEqual(probe({ image: "web:1", replicas: 1, port: 80 }), { tcpSocket: { port: "http" }, ...timing });
  assert.deepEqual(probe({ image: "web:1", replicas: 1, port: 80, readinessProbe: { type: "HTTP", path: "/healthz" } }), { httpGet: { path: "/healthz", port: "http" }, ...timing });
  assert.deepEqual(probe({ image: "web:1", replicas: 1, port: 80, readinessProbe: { type: "HTTP" } }), { httpGet: { path: "/", port: "http" }, ...timing });
  assert.equal(probe({ image: "web:1", replicas: 1, port: 80, readinessProbe: { type: "None" } }), undefined);
  assert.equal(probe({ image: "web:1", replicas: 1, readinessProbe: { type: "TCP" } }), undefined);
});

test("two Apps with the same image never share a selector", () => {
  const spec: AppSpec = { image: "nginx:1.27", replicas: 1 };
  const a = appDeployment(owner("a"), spec).spec as { selector: { matchLabels: Record<string, string> } };
  const b = appDeployment(owner("b"), spec).spec as { selector: { matchLabels: Record<string, string> } };
  assert.notDeepEqual(a.selector.matchLabels, b.selector.matchLabels);
});

test("a Memcached becomes memcached on 11211 with a memory limit above its cache, TCP readiness and liveness probes, a read-only root, no API token, meeting Pod Security restricted as user 11211", async () => {
  const cache = new components.MemcachedWorkload("cache", { owner: owner("cache", "Memcached"), spec: { size: 3, image: "memcached:1.6" } });
  await settle(cache.service);
  const deployment = byType("kubernetes:apps/v1:Deployment", "cache").inputs as { spec: { replicas: number; selector: unknown; template: { spec: { securityContext: unknown; containers: unknown[] } } } };
  assert.deepEqual(deployment.spec.template.spec.securityContext, { runAsNonRoot: true, runAsUser: 11211, seccompProfile: { type: "RuntimeDefault" } });
  assert.equal(deployment.spec.replicas, 3);
  assert.deepEqual(deployment.spec.selector, { matchLabels: { "app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "cache", "appstack.dev/kind": "Memcached" } });
  assert.deepEqual(deployment.spec.template.spec.containers, [
    {
      name: "memcached",
      image: "memcached:1.6",
      args: ["--memory-limit=64", "-o", "modern", "-v"],
      ports: [{ name: "memcached", containerPort: 11211, protocol: "TCP" }],
      resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { memory: "128Mi" } },
      readinessProbe: { tcpSocket: { port: 11211 }, periodSeconds: 5 },
      livenessProbe: { tcpSocket: { port: 11211 }, initialDelaySeconds: 30, periodSeconds: 10 },
      securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] }, readOnlyRootFilesystem: true },
    },
  ]);
  assert.equal((deployment.spec.template.spec as { automountServiceAccountToken?: boolean }).automountServiceAccountToken, false);
  const service = byType("kubernetes:core/v1:Service", "cache").inputs as { spec: { ports: unknown } };
  assert.deepEqual(service.spec.ports, [{ name: "memcached", port: 11211, targetPort: "memcached", protocol: "TCP" }]);
});
