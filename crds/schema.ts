// OpenAPI v3 pieces both kinds share: the status shape (kstatus conditions, stack report) and the
// CRD envelope. Kept as plain objects so that the install program and the YAML use the same data.
import { deletionPolicies, group, historyMessageLimit, maxDependencies, plurals, podSecurityProfiles, statusHistoryLimit, updatePolicies, updateWhys, version, type PodSecurityProfile, type WorkloadKind } from "./types.ts";
import { openApi, stringEnum, Type, type JsonSchema, type Static, type TSchema } from "./schema-kit.ts";

export type { JsonSchema };

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

/** The spec fields every kind has, in this order after its own; each kind has its own default Pod Security profile. */
export function workloadSpecFields(defaultProfile: PodSecurityProfile, defaultUser?: number) {
  return {
    updatePolicy: Type.Optional(stringEnum(updatePolicies, {
      default: "Auto",
      description: "Auto applies every change. Preview only previews changes; annotate appstack.dev/approve=<status.preview.planId> to apply that plan.",
    })),
    podSecurity: Type.Optional(podSecuritySchema(defaultProfile, defaultUser)),
    suspend: Type.Optional(Type.Boolean({
      description: "true stops every operation on the object: no pulumi up, no drift repair, no preview. The children are still observed and the status says what differs. A deletion leaves the children in place, as deletionPolicy Orphan does. false again applies whatever changed meanwhile.",
    })),
    // operator/controller/orphaning.ts. No default: absent reads as Delete, so objects stored
    // before the field existed stay as they are and an upgrade rewrites none.
    deletionPolicy: Type.Optional(stringEnum(deletionPolicies, {
      description:
        "What deleting this object does to its Deployment and Service. Delete (also when unset): pulumi destroy deletes them. Orphan: they stay as they are, running, without the ownerReference to this object, the label app.kubernetes.io/managed-by=appstack and appstack's pulumi.com/ annotations (the selector labels stay), and the stack is removed without a destroy. A suspended object (spec.suspend true) is always deleted as Orphan.",
    })),
    dependsOn: Type.Optional(dependsOnSchema),
    serviceAccountName: Type.Optional(serviceAccountNameSchema),
  };
}

/**
 * operator/controller/tenancy.ts. A plain name (a DNS-1123 subdomain, as a ServiceAccount's):
 * `system:serviceaccount:ns:sa` or `ns/sa` cannot be written, so no object names another
 * namespace's ServiceAccount.
 */
const serviceAccountNameSchema = Type.String({
  minLength: 1,
  maxLength: 253,
  pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
  description:
    "The ServiceAccount of this object's namespace whose rights the Pulumi engine and the operator use to create, change and delete this object's Deployment and Service (Kubernetes impersonation, as Flux's spec.serviceAccountName). Used only when the install turns tenant identities on (APPSTACK_DEFAULT_SERVICE_ACCOUNT); unset, the install's default ServiceAccount of this namespace is used. Not the pods' ServiceAccount. A name only: a ServiceAccount of another namespace cannot be named. What it may not do is refused by the API server, and the object is Stalled (reason Forbidden) with its words.",
});

/** operator/controller/dependencies.ts. */
const dependsOnSchema = Type.Array(
  Type.Object({
    kind: stringEnum(Object.keys(plurals) as WorkloadKind[], { description: "App or Memcached." }),
    name: Type.String({ minLength: 1, maxLength: 63, pattern: "^[a-z]([-a-z0-9]*[a-z0-9])?$", description: "The object's name, in this object's namespace." }),
  }),
  {
    maxItems: maxDependencies,
    description:
      "Objects of this namespace (App or Memcached) that must be Ready for their current generation (Ready condition True, status.observedGeneration equal to metadata.generation) before a new spec of this object is applied. Until then nothing is created or changed, and the Ready condition (reason DependencyNotReady) names what it waits for, a missing object included. A cycle is reported as Stalled (reason DependencyCycle). Drift repair of children already applied and deletion do not wait.",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["kind", "name"],
  },
);

function podSecuritySchema(defaultProfile: PodSecurityProfile, defaultUser?: number) {
  const user = defaultUser === undefined ? "" : ` (default ${defaultUser})`;
  return Type.Object({
    profile: Type.Optional(stringEnum(podSecurityProfiles, {
      default: defaultProfile,
      description: "Baseline: the container runs as its image says, root included. Restricted: runAsNonRoot, allowPrivilegeEscalation false, every capability dropped, seccomp RuntimeDefault; the image must run as a numeric non-root user, or runAsUser names one.",
    })),
    runAsUser: Type.Optional(Type.Integer({ format: "int64", minimum: 1, maximum: 2147483647, description: `The user id the container runs as${user}; never 0 (root).` })),
  }, {
    description: `The Pod Security Standard the pods meet (default ${defaultProfile}). Restricted is what a namespace labelled pod-security.kubernetes.io/enforce=restricted admits.`,
  });
}

/** spec.podSecurity, as TypeScript reads it. */
export type PodSecurity = Static<ReturnType<typeof podSecuritySchema>>;

/** An entry of spec.dependsOn: an object of the same namespace whose new spec waits for it to be Ready. */
export type DependencyRef = Static<typeof dependsOnSchema>[number];

export const planColumn = { name: "Plan", type: "string", jsonPath: ".status.preview.planId", description: "A plan waiting for approval." };

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

// The API server takes any DNS subdomain of up to 253 characters as an object's name, but the
// name also names the Service and is a label value of every child: refused here, at apply time,
// rather than by the first `pulumi up`.
const nameRule = {
  rule: "self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
  message: "metadata.name must be a DNS-1035 label of at most 63 characters (lower case letters, digits and '-', starting with a letter): it names the object's Service and labels its pods",
  reason: "FieldValueInvalid",
};

/** An object cannot wait for itself; longer cycles are the reconciler's to find (they span objects). */
const selfDependencyRule = (kind: WorkloadKind) => ({
  rule: `!has(self.spec) || !has(self.spec.dependsOn) || !self.spec.dependsOn.exists(d, d.kind == '${kind}' && d.name == self.metadata.name)`,
  message: "spec.dependsOn names the object itself: an object cannot wait for itself",
  fieldPath: ".spec.dependsOn",
  reason: "FieldValueInvalid",
});

export interface CustomResourceDefinition {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string; labels: Record<string, string> };
  spec: JsonSchema;
}

export function customResourceDefinition(
  kind: WorkloadKind,
  plural: string,
  schema: { description: string; spec: TSchema; status: JsonSchema },
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
              description: schema.description,
              "x-kubernetes-validations": [nameRule, selfDependencyRule(kind)],
              properties: {
                apiVersion: { type: "string", description: "APIVersion defines the versioned schema of this representation of an object." },
                kind: { type: "string", description: "Kind is a string value representing the REST resource this object represents." },
                // The API server refuses anything here but the type: kubectl explain takes ObjectMeta's own text.
                metadata: { type: "object" },
                spec: openApi(schema.spec),
                status: schema.status,
              },
            },
          },
        },
      ],
    },
  };
}
