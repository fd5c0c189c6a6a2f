// What appstack's components create, as plain manifests: no Pulumi at run time here, so the same
// functions serve the components, their tests, and the benchmark's baseline reconciler.
import type * as k8s from "@pulumi/kubernetes";
import type { AppSpec } from "./app.ts";
import type { MemcachedSpec } from "./memcached.ts";
import { childMetadata, selectorLabels, type Owner } from "./metadata.ts";
import { securityContexts } from "./pod-security.ts";

/** The app.kubernetes.io/name of a Memcached's children. */
export const memcachedAppName = "memcached";

const containerName = "app";

export function appDeployment(owner: Owner, spec: AppSpec): k8s.types.input.apps.v1.Deployment {
  const selector = selectorLabels(owner, owner.name);
  const metadata = childMetadata(owner, owner.name);
  const security = securityContexts(spec.podSecurity, { profile: "Baseline" });
  const readinessProbe = appReadinessProbe(spec);
  return {
    metadata,
    spec: {
      replicas: spec.replicas,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels: metadata.labels },
        spec: {
          ...(security.pod ? { securityContext: security.pod } : {}),
          // No API token in pods that never call the API, unless the spec asks for one.
          automountServiceAccountToken: spec.automountServiceAccountToken ?? false,
          containers: [
            {
              name: containerName,
              image: spec.image,
              ...(security.container ? { securityContext: security.container } : {}),
              ...(spec.port ? { ports: [{ name: "http", containerPort: spec.port, protocol: "TCP" }] } : {}),
              ...(readinessProbe ? { readinessProbe } : {}),
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

/**
 * An App with a port gets a readiness probe on it unless its spec turns it off: without one a pod
 * counts as ready, and joins its Service, as soon as its container starts, before its server
 * listens, and the first requests after Ready are refused. Every 2 s rather than the kubelet's
 * 10 s: a probe that runs before the server listens would otherwise hold the pod back 10 s.
 */
export function appReadinessProbe(spec: AppSpec): k8s.types.input.core.v1.Probe | undefined {
  const probe = spec.readinessProbe ?? { type: "TCP" };
  if (spec.port === undefined || probe.type === "None") return undefined;
  const timing = { periodSeconds: 2, timeoutSeconds: 1, failureThreshold: 3 };
  if (probe.type === "HTTP") return { httpGet: { path: probe.path ?? "/", port: "http" }, ...timing };
  return { tcpSocket: { port: "http" }, ...timing };
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

export const defaultMemcachedImage = "memcached:1.6";

/** The memcache user of the official memcached image; any image runs as it under Restricted. */
export const defaultMemcachedUser = 11211;

/** memcached's item storage (`--memory-limit`, in MiB: memcached counts megabytes of 1,048,576 bytes). */
export const memcachedCacheMiB = 64;

/**
 * The container's memory, request and limit alike: the cache and as much again. `--memory-limit`
 * bounds only the items; memcached allocates outside it too: the first 1 MiB page of each of its
 * slab classes (some forty) even past the limit, its hash table (a few MiB for a cache this size,
 * twice that while it grows), each connection's buffers and each worker thread's stack. The kernel
 * kills the container at its limit, so the limit must be the cache and that, never the cache alone;
 * the request equal to the limit keeps the pods' memory Guaranteed.
 */
export const memcachedMemory = `${memcachedCacheMiB * 2}Mi`;

/** How the kubelet tells memcached's pods are up: a TCP connection to 11211 (memcached answers nothing else without a client protocol). */
const memcachedProbe = { tcpSocket: { port: memcachedPort } };

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
          // memcached never calls the API.
          automountServiceAccountToken: false,
          containers: [
            {
              name: "memcached",
              image: spec.image,
              // memcached writes no file (no extstore here): a read-only root under any profile.
              securityContext: { ...security.container, readOnlyRootFilesystem: true },
              args: [`--memory-limit=${memcachedCacheMiB}`, "-o", "modern", "-v"],
              ports: [{ name: "memcached", containerPort: memcachedPort, protocol: "TCP" }],
              resources: { requests: { cpu: "100m", memory: memcachedMemory }, limits: { memory: memcachedMemory } },
              // Ready as soon as it accepts connections (the Service sends none before); live unless it stops accepting them.
              readinessProbe: { ...memcachedProbe, periodSeconds: 5 },
              livenessProbe: { ...memcachedProbe, initialDelaySeconds: 30, periodSeconds: 10 },
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
