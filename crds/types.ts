// The appstack.dev/v1alpha1 API as TypeScript types: what every kind's objects have (the common
// spec fields, the status), whatever their kind; each kind's own spec type comes from its schema.
import type { CommonSpec, DependencyRef, PodSecurity } from "./spec-fields.ts";

export type { CommonSpec, DependencyRef, PodSecurity };

/**
 * The API group of App and Memcached, and of any kind whose definition names none. The operator's
 * own annotations, labels and finalizers are under this name whatever a kind's group.
 */
export const defaultGroup = "appstack.dev";
/** The version every kind serves and stores. */
export const version = "v1alpha1";
/** The apiVersion of a kind of `group`. */
export const apiVersionOf = (group: string): string => `${group}/${version}`;

export interface ObjectMeta {
  name: string;
  namespace: string;
  uid: string;
  generation?: number;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  // Typed as client-node types them; only their presence matters to the operator.
  deletionTimestamp?: Date;
  creationTimestamp?: Date;
}

/**
 * Auto: every change is applied by `pulumi up` as it comes. Preview: every change is previewed,
 * and applied only when a person approves that exact plan (annotation appstack.dev/approve).
 */
export type UpdatePolicy = "Auto" | "Preview";

export const updatePolicies: readonly UpdatePolicy[] = ["Auto", "Preview"];

/**
 * What deleting the object does to its children. Delete (also when absent): `pulumi destroy`
 * deletes them. Orphan: they stay, without appstack's ownerReference and managed-by label, and the
 * stack is removed without a destroy. A suspended object is deleted as Orphan whatever this says.
 */
export type DeletionPolicy = "Delete" | "Orphan";

export const deletionPolicies: readonly DeletionPolicy[] = ["Delete", "Orphan"];

/** Set to the plan id of status.preview to apply exactly that plan. */
export const approveAnnotation = "appstack.dev/approve";

/**
 * Set to any new value (a timestamp, say) to run a refresh and `up` now, even when nothing seems
 * to differ; status.lastHandledReconcileAt says when the value has been handled. Flux's
 * `reconcile.fluxcd.io/requestedAt`.
 */
export const reconcileRequestAnnotation = "appstack.dev/reconcile-requested-at";

/**
 * The Pod Security Standard the children's pods meet. Baseline: the container runs as its image
 * says (root included). Restricted: what a namespace enforcing `restricted` admits: not root, no
 * privilege escalation, every capability dropped, the runtime's default seccomp profile.
 */
export type PodSecurityProfile = "Baseline" | "Restricted";

export const podSecurityProfiles: readonly PodSecurityProfile[] = ["Baseline", "Restricted"];

/** At most this many entries in spec.dependsOn. */
export const maxDependencies = 16;

/** metav1.Condition. */
export interface Condition {
  type: "Ready" | "Reconciling" | "Stalled";
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

/** Resources by kind of step (create, update, replace, delete, same, ...). */
export type StepCounts = Record<string, number>;

/**
 * Why an update ran, as appstack decided it: the object's first update (created), a new spec
 * (spec), live children that differed (drift), a plan a person approved (approved), a new operator
 * program (program), an operation left unfinished (interrupted), the object's deletion (deleted),
 * a person's request (requested: the annotation appstack.dev/reconcile-requested-at).
 */
export const updateWhys = ["created", "spec", "drift", "approved", "program", "interrupted", "deleted", "requested"] as const;
export type UpdateWhy = (typeof updateWhys)[number];

export interface StackOperation {
  kind: "preview" | "up" | "refresh" | "destroy";
  result: "succeeded" | "failed";
  startTime: string;
  endTime: string;
  resourceChanges?: StepCounts;
  message?: string;
  /** For an up, refresh or destroy appstack ran: the generation it applied and why it ran. */
  update?: UpdateRecord;
}

/** Why an update ran, as its message in the stack's history and status.history record it. */
export interface UpdateRecord {
  /** The object's metadata.generation the update applied. */
  readonly generation: number;
  readonly why: UpdateWhy;
  /** The decision's reason, in words. */
  readonly detail?: string;
  /** For a drift repair: what differed, one entry per difference (`Deployment web: spec.replicas`). */
  readonly fields?: readonly string[];
  /** For an approved plan: its id. */
  readonly plan?: string;
  /** 2 and up when earlier attempts of the same update failed. */
  readonly attempt?: number;
}


/** Operations kept in status.history, newest last: what `kubectl appstack history` reads with `get` rights alone. */
export const statusHistoryLimit = 10;
/** A failed operation's message in status.history is cut to this length: the Stalled condition has the latest in full. */
export const historyMessageLimit = 300;

export interface StackStatus {
  name: string;
  lastOperation?: StackOperation;
  /** What the last successful `up` was made from; equal again means nothing to do. */
  appliedFingerprint?: string;
  /** The approved plan the last successful `up` applied (updatePolicy Preview). */
  appliedPlan?: string;
  /** Consecutive failed attempts, and when the next one is due. */
  attempts?: number;
  nextRetryTime?: string;
}

/** One resource in a preview: the step the engine plans for it, and which properties change. */
export interface PreviewStep {
  /** The resource's type and name, as Pulumi shows them. */
  type: string;
  name: string;
  /** create, update, replace, delete, same (and the engine's rarer steps, such as read). */
  step: string;
  /** Changed property paths, as in `spec.template.spec.containers[0].image`; empty for creates. */
  paths?: string[];
}

/** A preview waiting for approval (updatePolicy Preview). */
export interface PreviewStatus {
  /** Approve with `kubectl annotate <kind> <name> appstack.dev/approve=<planId>`. */
  planId: string;
  /** The generation the preview was made from. */
  generation: number;
  /** The spec and live children the plan was made against; a different basis makes it stale. */
  basis: string;
  /** Why a preview was needed (spec changed, never applied, drift). */
  reason: string;
  time: string;
  /** Resources by planned step. */
  changes: StepCounts;
  steps: PreviewStep[];
}

export interface WorkloadStatus {
  observedGeneration?: number;
  replicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  /** Label selector of the pods, for the scale subresource (HPA, `kubectl scale`). */
  selector?: string;
  conditions?: Condition[];
  lastUpdateTime?: string;
  stack?: StackStatus;
  /** Set while changes wait for approval. */
  preview?: PreviewStatus;
  /** Pods that cannot start (image pull, crash loop, configuration error, no node fits); absent when none. */
  podsNotStarting?: number;
  /** The last statusHistoryLimit updates, refreshes and destroys of the stack, oldest first. */
  history?: StackOperation[];
  /** The last value of the annotation appstack.dev/reconcile-requested-at that was acted on. */
  lastHandledReconcileAt?: string;
}

/**
 * An object of a kind: its own spec fields (`Spec`, the kind's schema's type) with the fields every
 * kind has, and the status every kind reports with its own fields (`Status`).
 */
export interface KindObject<Spec extends object = object, Status extends WorkloadStatus = WorkloadStatus> {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: CommonSpec & Spec;
  status?: Status;
}

/** An object of any kind, as the operator handles it: only what every kind has. */
export type Workload = KindObject;

/** A kind's name (App); components/kinds.ts knows which exist. */
export type WorkloadKind = string;
