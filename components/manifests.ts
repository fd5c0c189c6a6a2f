// What appstack's components create, as plain manifests: no Pulumi at run time here, so the same
// functions serve the components, their tests, and the benchmark's baseline reconciler.
import type * as k8s from "@pulumi/kubernetes";
import type { AppSpec, MemcachedSpec, Workload } from "../crds/types.ts";
import { childMetadata, ownerOf, selectorLabels, type Owner } from "./metadata.ts";

const memcachedAppName = "memcached";

/** The app.kubernetes.io/name of an object's children: the App's own name, or "memcached". */
export function appNameOf(object: Workload): string {
  return object.kind === "App" ? object.metadata.name : memcachedAppName;
}

/** The labels that select exactly the pods of `object`. */
export function podSelector(object: Workload): Record<string, string> {
  return selectorLabels(ownerOf(object), appNameOf(object));
}

const containerName = "app";

export function appDeployment(owner: Owner, spec: AppSpec): k8s.types.input.apps.v1.Deployment {
  const selector = selectorLabels(owner, owner.name);
  const metadata = childMetadata(owner, owner.name);
  return {
    metadata,
    spec: {
      replicas: spec.replicas,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels: metadata.labels },
        spec: {
          containers: [
            {
              name: containerName,
              image: spec.image,
              ...(spec.port ? { ports: [{ name: "http", containerPort: spec.port, protocol: "TCP" }] } : {}),
              ...(spec.env?.length ? { env: spec.env.map((e) => ({ name: e.name, value: e.value ?? "" })) } : {}),
              ...(spec.resources ? { resources: spec.resources } : {}),
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
  return {
    metadata,
    spec: {
      replicas: spec.size,
      selector: { matchLabels: selectorLabels(owner, memcachedAppName) },
      template: {
        metadata: { labels: metadata.labels },
        spec: {
          containers: [
            {
              name: "memcached",
              image: spec.image,
              args: ["-m=64", "-o", "modern", "-v"],
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

/** A child of an appstack object as its component declares it: the kind and the manifest applied. */
export interface ChildManifest {
  readonly kind: "Deployment" | "Service";
  readonly name: string;
  readonly manifest: k8s.types.input.apps.v1.Deployment | k8s.types.input.core.v1.Service;
}

/** Every child `object` has, with the manifests its component applies (the same functions). */
export function childManifests(object: Workload): ChildManifest[] {
  const owner = ownerOf(object);
  const children: ChildManifest[] = [];
  const add = (kind: ChildManifest["kind"], manifest: ChildManifest["manifest"] | undefined) => {
    if (manifest) children.push({ kind, name: owner.name, manifest });
  };
  if (object.kind === "App") {
    add("Deployment", appDeployment(owner, object.spec));
    add("Service", appService(owner, object.spec));
  } else {
    add("Deployment", memcachedDeployment(owner, object.spec));
    add("Service", memcachedService(owner));
  }
  return children;
}
