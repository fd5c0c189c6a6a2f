// The status every kind reports, as OpenAPI v3: kstatus conditions, the stack report, the preview
// waiting for approval and the history; a kind adds its own fields (its definition's `status`).
import { historyMessageLimit, statusHistoryLimit, updateWhys } from "./types.ts";
import type { JsonSchema } from "./schema-kit.ts";

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
      type: { type: "string", maxLength: 316, description: "Ready, Reconciling or Stalled." },
      status: { type: "string", enum: ["True", "False", "Unknown"], description: "Whether the condition holds." },
      reason: { type: "string", maxLength: 1024, description: "Why, in one CamelCase word (for example Available, RepairingDrift, StackUpdateFailed, ResourceConflict)." },
      message: { type: "string", maxLength: 32768, description: "What happened, for a person: the differing fields, the engine's error." },
      observedGeneration: { type: "integer", format: "int64", minimum: 0, description: "The object's generation when the condition was set." },
      lastTransitionTime: { ...timestamp, description: "When the status last changed from one value to another." },
    },
  },
};

const stack: JsonSchema = {
  type: "object",
  description: "The Pulumi stack behind this object and its last operation.",
  properties: {
    name: { type: "string", description: "The stack's name: <kind>.<namespace>.<name>, ending in a digest when too long for Pulumi." },
    appliedFingerprint: { type: "string", description: "The operator program's version and the generation that the last successful up applied." },
    appliedPlan: { type: "string", description: "The approved plan (status.preview.planId) that the last successful up applied, with updatePolicy Preview." },
    attempts: { type: "integer", minimum: 0, description: "Consecutive failed attempts; 0 after a success." },
    nextRetryTime: { ...timestamp, description: "When the next attempt is due after a failure (capped exponential backoff)." },
    lastOperation: operation("The last Pulumi operation run on the stack."),
  },
};

/** One Pulumi operation on the stack, as status.stack.lastOperation and each entry of status.history say it. */
function operation(description: string): JsonSchema {
  return {
    type: "object",
    description,
    properties: {
      kind: { type: "string", enum: ["preview", "up", "refresh", "destroy"], description: "Which operation." },
      result: { type: "string", enum: ["succeeded", "failed"], description: "How it ended." },
      startTime: { ...timestamp, description: "When it started." },
      endTime: { ...timestamp, description: "When it ended." },
      message: { type: "string", description: "The engine's message when it failed." },
      resourceChanges: { type: "object", additionalProperties: { type: "integer" }, description: "Resources by kind of step (create, update, delete, same, ...)." },
      update: {
        type: "object",
        description: "Why appstack ran it, as its message in the stack's history records it.",
        required: ["generation", "why"],
        properties: {
          generation: { type: "integer", format: "int64", description: "The object's generation it applied." },
          why: { type: "string", enum: [...updateWhys], description: "created (the first update), spec (a new spec), drift (children repaired), approved (a plan a person approved), program (a new operator program), interrupted (an unfinished operation completed), deleted, requested (the annotation appstack.dev/reconcile-requested-at)." },
          detail: { type: "string", description: "The decision, in words." },
          fields: { type: "array", items: { type: "string" }, description: "For a drift repair: what differed (Deployment web: spec.replicas)." },
          plan: { type: "string", description: "For an approved plan: its id." },
          attempt: { type: "integer", minimum: 2, description: "2 and up when earlier attempts of the same update failed." },
        },
      },
    },
  };
}

const history: JsonSchema = {
  type: "array",
  maxItems: statusHistoryLimit,
  description: `The stack's last ${statusHistoryLimit} updates, refreshes and destroys, oldest first: what \`kubectl appstack history\` shows to anyone who may get the object. A failure's message is cut to ${historyMessageLimit} characters.`,
  items: operation("One update, refresh or destroy."),
};

const preview: JsonSchema = {
  type: "object",
  description: "The preview waiting for approval (updatePolicy Preview): planned step per resource and counts by step.",
  required: ["planId", "generation", "basis", "changes", "steps"],
  properties: {
    planId: { type: "string", description: "Approve with: kubectl annotate <kind> <name> appstack.dev/approve=<planId>" },
    generation: { type: "integer", format: "int64", description: "The object's generation the preview was made from; an approval of an older one is refused." },
    basis: { type: "string", description: "Digest of the spec and the live children the preview was made from; an approval after either changed is refused." },
    reason: { type: "string", description: "Why the preview was made: a new object, a spec change, drift." },
    time: { ...timestamp, description: "When the preview was made." },
    changes: { type: "object", additionalProperties: { type: "integer" }, description: "Resources by planned step (create, update, delete, same, ...)." },
    steps: {
      type: "array",
      description: "The planned step of each resource.",
      items: {
        type: "object",
        required: ["type", "name", "step"],
        properties: {
          type: { type: "string", description: "The Pulumi resource type, for example kubernetes:apps/v1:Deployment." },
          name: { type: "string", description: "The resource's name in the stack." },
          step: { type: "string", description: "create, update, replace, delete or same." },
          paths: { type: "array", items: { type: "string" }, description: "The properties that change, for example spec.replicas." },
        },
      },
    },
  },
};

export function workloadStatus(extra: Record<string, JsonSchema> = {}): JsonSchema {
  return {
    type: "object",
    description: "What the operator observed and did, written by the operator only.",
    // Read as observedGeneration 0 before the operator first writes: kstatus reads an object with
    // no status and no conditions as Current, a new one included.
    default: {},
    properties: {
      observedGeneration: {
        type: "integer",
        format: "int64",
        minimum: 0,
        default: 0,
        description: "The generation whose spec has been applied, or, while the Stalled condition is True, the generation that cannot be; 0 until a first spec is applied. A newer spec that is being applied or waits for approval (updatePolicy Preview) leaves it behind: compare it with metadata.generation to know whether the spec is applied, and read the Ready condition for the rest.",
      },
      replicas: { type: "integer", format: "int32", description: "Pods of the object's own Deployment." },
      readyReplicas: { type: "integer", format: "int32", description: "Ready pods of the object's own Deployment." },
      availableReplicas: { type: "integer", format: "int32", description: "Available pods of the object's own Deployment." },
      podsNotStarting: { type: "integer", format: "int32", minimum: 1, description: "Pods that cannot start: a container waiting on an image pull, a crash loop or a configuration error, or no node fits; the Ready condition names why. Absent when none." },
      selector: { type: "string", description: "The pods' label selector, for the scale subresource." },
      conditions,
      lastUpdateTime: { ...timestamp, description: "When the operator last changed the status." },
      stack,
      preview,
      history,
      lastHandledReconcileAt: {
        type: "string",
        description: "The last value of the annotation appstack.dev/reconcile-requested-at whose refresh and up have ended (succeeded or failed: read the conditions); not changed while the object is suspended.",
      },
      ...extra,
    },
  };
}

