// App, the general web workload, as one kind definition: its spec (one container image, replicas,
// an optional port), a Deployment, and a ClusterIP Service when it has a port.
import type * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { envSchema, imageSchema, resourcesSchema } from "../crds/fields.ts";
import { stringEnum, Type } from "../crds/schema-kit.ts";
import { automountServiceAccountTokenField, networkPolicyField, podSecurityField } from "../crds/spec-fields.ts";
import { appDeployment, appService } from "./manifests.ts";
import type { Owner } from "./metadata.ts";
import { deploymentChild, networkPolicyChild, serviceChild } from "./child-kind.ts";
import { objectNetworkPolicy } from "./object-network-policy.ts";
import { declareChildren, defineKind, type ChildManifest, type ObjectOf } from "./workload.ts";

/** How the kubelet tells that an App's pod serves on its port (manifests.ts appReadinessProbe). */
export const readinessProbeTypes = ["TCP", "HTTP", "None"] as const;

function readinessProbeSchema() {
  return Type.Object({
    type: stringEnum(readinessProbeTypes, {
      default: "TCP",
      description: "TCP (the default): a pod is ready once a connection to the port succeeds. HTTP: once a GET of path answers 200 to 399. None: no readiness probe; a pod is ready as soon as its container runs, before its server may listen.",
    }),
    path: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, pattern: "^/", description: "The path the HTTP probe gets (default /). Only with type HTTP." })),
  }, {
    description: "The readiness probe of the App's container on spec.port, probed every 2 s. Without a port there is no probe. The App is Ready once its Service routes to every ready pod, so a request right after `kubectl wait --for=condition=Ready` is served.",
    "x-kubernetes-validations": [{ rule: "!has(self.path) || self.type == 'HTTP'", message: "path is only for a readinessProbe of type HTTP" }],
  });
}

const appFields = {
  image: imageSchema(),
  replicas: Type.Integer({ format: "int32", default: 1, minimum: 0, maximum: 1000, description: "Number of pods (kubectl scale changes it)." }),
  port: Type.Optional(Type.Integer({ format: "int32", minimum: 1, maximum: 65535, description: "When set, the container exposes it and a ClusterIP Service named after the App routes to it." })),
  readinessProbe: Type.Optional(readinessProbeSchema()),
  env: Type.Optional(envSchema),
  resources: Type.Optional(resourcesSchema),
  // Baseline: an App's image may need root (nginx binds port 80 as root).
  podSecurity: podSecurityField("Baseline"),
  // An App's image may be a client of the API; a Memcached's never is, so only the App asks.
  automountServiceAccountToken: automountServiceAccountTokenField(),
  networkPolicy: networkPolicyField("spec.port (an App without a port lets nothing in)"),
};

export type App = ObjectOf<typeof appFields>;
export type AppSpec = App["spec"];

export interface AppWorkloadArgs {
  /** The App the children belong to. A plain value: it names and labels the children. */
  readonly owner: Owner;
  /** The App's spec. A plain value: whether a Service exists depends on it. */
  readonly spec: AppSpec;
}

/** The kinds of child an App makes. */
const appChildKinds = [deploymentChild, serviceChild, networkPolicyChild] as const;

/**
 * An App's children: its Deployment, its Service when it has a port, and its NetworkPolicy when
 * spec.networkPolicy asks for one. The component declares exactly these.
 */
function appChildren(owner: Owner, spec: AppSpec): ChildManifest[] {
  const service = appService(owner, spec);
  const children: ChildManifest[] = [{ kind: "Deployment", name: owner.name, manifest: appDeployment(owner, spec) }];
  if (service) children.push({ kind: "Service", name: owner.name, manifest: service });
  if (spec.networkPolicy) children.push({ kind: "NetworkPolicy", name: owner.name, manifest: objectNetworkPolicy(owner, owner.name, spec.port === undefined ? [] : [spec.port], spec.networkPolicy) });
  return children;
}

export class AppWorkload extends pulumi.ComponentResource {
  public readonly deployment: k8s.apps.v1.Deployment;
  public readonly service?: k8s.core.v1.Service;
  public readonly networkPolicy?: k8s.networking.v1.NetworkPolicy;

  constructor(name: string, args: AppWorkloadArgs, opts?: pulumi.ComponentResourceOptions) {
    super("appstack:apps:App", name, {}, opts);
    const declared = declareChildren(name, appChildren(args.owner, args.spec), appChildKinds, this);
    // appChildren always lists the Deployment.
    this.deployment = declared.Deployment!;
    this.service = declared.Service;
    this.networkPolicy = declared.NetworkPolicy;
    this.registerOutputs({ deployment: this.deployment.metadata.name, service: this.service?.metadata.name, networkPolicy: this.networkPolicy?.metadata.name });
  }
}

export const appKind = defineKind({
  api: {
    kind: "App",
    plural: "apps",
    shortNames: ["asapp"],
    description: "An App runs one container image as a Deployment, with a ClusterIP Service when it has a port; appstack reconciles it through a Pulumi stack of its own.",
    spec: { description: "The workload: one container image run as a Deployment, with a Service when it has a port.", fields: appFields },
    printerColumns: [
      { name: "Image", type: "string", jsonPath: ".spec.image" },
      { name: "Desired", type: "integer", jsonPath: ".spec.replicas" },
      { name: "Ready", type: "integer", jsonPath: ".status.readyReplicas" },
    ],
    replicasPath: ".spec.replicas",
  },
  appName: (object) => object.metadata.name,
  childKinds: appChildKinds,
  children: appChildren,
  component: (owner, spec, opts) => new AppWorkload(owner.name, { owner, spec }, opts),
  replicas: (spec) => spec.replicas,
});
