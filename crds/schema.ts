// OpenAPI v3 pieces both kinds share: the status shape (kstatus conditions, stack report) and the
// CRD envelope. Kept as plain objects so that the install program and the YAML use the same data.
import { group, updatePolicies, version, type WorkloadKind } from "./types.ts";

export type JsonSchema = Record<string, unknown>;

const timestamp: JsonSchema = { type: "string", format: "date-time" };

const conditions: JsonSchema = {
  type: "array",
  description: "Ready, Reconciling and Stalled, in the metav1.Condition shape (kstatus).",
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": ["type"],
  items: {
    type: "object",
    required: ["type", "status", "reason", "message", "lastTransitionTime"],
    properties: {
      type: { type: "string", maxLength: 316 },
      status: { type: "string", enum: ["True", "False", "Unknown"] },
      reason: { type: "string", maxLength: 1024 },
      message: { type: "string", maxLength: 32768 },
      observedGeneration: { type: "integer", format: "int64", minimum: 0 },
      lastTransitionTime: timestamp,
    },
  },
};

const stack: JsonSchema = {
  type: "object",
  description: "The Pulumi stack behind this object and its last operation.",
  properties: {
    name: { type: "string" },
    appliedFingerprint: { type: "string" },
    attempts: { type: "integer", minimum: 0 },
    nextRetryTime: timestamp,
    lastOperation: {
      type: "object",
      properties: {
        kind: { type: "string", enum: ["preview", "up", "refresh", "destroy"] },
        result: { type: "string", enum: ["succeeded", "failed"] },
        startTime: timestamp,
        endTime: timestamp,
        message: { type: "string" },
        resourceChanges: { type: "object", additionalProperties: { type: "integer" } },
      },
    },
  },
};

const preview: JsonSchema = {
  type: "object",
  description: "The preview waiting for approval (updatePolicy Preview): planned step per resource and counts by step.",
  required: ["planId", "generation", "basis", "changes", "steps"],
  properties: {
    planId: { type: "string", description: "Approve with: kubectl annotate <kind> <name> appstack.dev/approve=<planId>" },
    generation: { type: "integer", format: "int64" },
    basis: { type: "string" },
    reason: { type: "string" },
    time: timestamp,
    changes: { type: "object", additionalProperties: { type: "integer" } },
    steps: {
      type: "array",
      items: {
        type: "object",
        required: ["type", "name", "step"],
        properties: {
          type: { type: "string" },
          name: { type: "string" },
          step: { type: "string" },
          paths: { type: "array", items: { type: "string" } },
        },
      },
    },
  },
};

/** Shared by both kinds' specs. */
export const updatePolicySchema: JsonSchema = {
  type: "string",
  enum: [...updatePolicies],
  default: "Auto",
  description: "Auto applies every change. Preview only previews changes; annotate appstack.dev/approve=<status.preview.planId> to apply that plan.",
};

export const planColumn = { name: "Plan", type: "string", jsonPath: ".status.preview.planId", description: "A plan waiting for approval." };

export function workloadStatus(extra: Record<string, JsonSchema> = {}): JsonSchema {
  return {
    type: "object",
    properties: {
      observedGeneration: { type: "integer", format: "int64" },
      replicas: { type: "integer", format: "int32" },
      readyReplicas: { type: "integer", format: "int32" },
      availableReplicas: { type: "integer", format: "int32" },
      selector: { type: "string" },
      conditions,
      lastUpdateTime: timestamp,
      stack,
      preview,
      ...extra,
    },
  };
}

export const readyReasonColumn = {
  name: "Status",
  type: "string",
  jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
};

/** status, and scale driven by `specReplicasPath` (what `kubectl scale` and an HPA change). */
export function workloadSubresources(specReplicasPath: string): JsonSchema {
  return { status: {}, scale: { specReplicasPath, statusReplicasPath: ".status.replicas", labelSelectorPath: ".status.selector" } };
}

export const ageColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };

export interface CustomResourceDefinition {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string; labels: Record<string, string> };
  spec: JsonSchema;
}

export function customResourceDefinition(
  kind: WorkloadKind,
  plural: string,
  schema: { spec: JsonSchema; status: JsonSchema },
  extras: { printerColumns: JsonSchema[]; subresources: JsonSchema; shortNames?: string[] },
): CustomResourceDefinition {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${group}`, labels: { "app.kubernetes.io/part-of": "appstack" } },
    spec: {
      group,
      scope: "Namespaced",
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List`, categories: ["appstack"], ...(extras.shortNames ? { shortNames: extras.shortNames } : {}) },
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          subresources: extras.subresources,
          additionalPrinterColumns: extras.printerColumns,
          schema: {
            openAPIV3Schema: {
              type: "object",
              required: ["spec"],
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                spec: schema.spec,
                status: schema.status,
              },
            },
          },
        },
      ],
    },
  };
}
