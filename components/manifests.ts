// What appstack's components create, as plain manifests: no Pulumi at run time here, so the same
// functions serve the components, their tests, and the benchmark's baseline reconciler.
import type * as k8s from "@pulumi/kubernetes";
import type { AppSpec, MemcachedSpec } from "../crds/types.ts";
import { defaultMemcachedUser } from "../crds/memcached.ts";
import { childMetadata, selectorLabels, type Owner } from "./metadata.ts";
import { securityContexts } from "./pod-security.ts";

/** The app.kubernetes.io/name of a Memcached's children. */
export const memcachedAppName = "memcached";

const containerName = "app";

export function appDeployment(owner: Owner, spec: AppSpec): k8s.types.input.apps.v1.Deployment {
  const selector = selectorLabels(owner, owner.name);
  const metadata = childMetadata(owner, owner.name);
  const security = securityContexts(spec.podSecurity, { profile: "Baseline" });
  return {
    metadata,
    spec: {
      replicas: spec.replicas,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels: metadata.labels },
        spec: {
          ...(security.pod ? { securityContext: security.pod } : {}),
          containers: [
            {
              name: containerName,
              image: spec.image,
              ...(security.container ? { securityContext: security.container } : {}),
              ...(spec.port ? { ports: [{ name: "http", containerPort: spec.port, protocol: "TCP" }] } : {}),
              ...(spec.env?.length ? { env: spec.env.map((e) => ({ name: e.name, value: e.value ?? "" })) } : {}),
              // Quantities are int-or-string in the API; the SDK types them as strings only. Passed
              // as written, so that a spec's `cpu: 1` stays what the stack applied before.
              ...(spec.resources ? { resources: spec.resources as k8s.types.input.core.v1.ResourceRequirements } : {}),
            },
          ],
        },
      },
    },
  };
}

/** The Service for an App with a port; none without one. */
export function appService(owner: Owner, spec: AppSpec): k8s.types.input.core.v1.Service | undefined {
  if (spec.port === undefined) return undefined;
  return {
    metadata: childMetadata(owner, owner.name),
    spec: {
      type: "ClusterIP",
      selector: selectorLabels(owner, owner.name),
      ports: [{ name: "http", port: spec.port, targetPort: "http", protocol: "TCP" }],
    },
  };
}

export const memcachedPort = 11211;

export function memcachedDeployment(owner: Owner, spec: MemcachedSpec): k8s.types.input.apps.v1.Deployment {
  const metadata = childMetadata(owner, memcachedAppName);
  const security = securityContexts(spec.podSecurity, { profile: "Restricted", runAsUser: defaultMemcachedUser });
  return {
    metadata,
    spec: {
      replicas: spec.size,
      selector: { matchLabels: selectorLabels(owner, memcachedAppName) },
      template: {
        metadata: { labels: metadata.labels },
        spec: {
          ...(security.pod ? { securityContext: security.pod } : {}),
          containers: [
            {
              name: "memcached",
              image: spec.image,
              ...(security.container ? { securityContext: security.container } : {}),
              args: ["--memory-limit=64", "-o", "modern", "-v"],
              ports: [{ name: "memcached", containerPort: memcachedPort, protocol: "TCP" }],
              resources: { requests: { cpu: "100m", memory: "128Mi" } },
              livenessProbe: { tcpSocket: { port: memcachedPort }, initialDelaySeconds: 30, periodSeconds: 10 },
            },
          ],
        },
      },
    },
  };
}

export function memcachedService(owner: Owner): k8s.types.input.core.v1.Service {
  return {
    metadata: childMetadata(owner, memcachedAppName),
    spec: {
      type: "ClusterIP",
      selector: selectorLabels(owner, memcachedAppName),
      ports: [{ name: "memcached", port: memcachedPort, targetPort: "memcached", protocol: "TCP" }],
    },
  };
}
