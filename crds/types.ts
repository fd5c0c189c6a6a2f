// The appstack.dev/v1alpha1 API as TypeScript types: what users write (spec) and what the operator
// reports (status). The OpenAPI schemas beside this file are the API server's view of the same.
export const group = "appstack.dev";
export const version = "v1alpha1";
export const apiVersion = `${group}/${version}`;

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

export interface EnvVar {
  name: string;
  value?: string;
}

export interface ResourceRequirements {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
}

export interface AppSpec {
  image: string;
  replicas: number;
  port?: number;
  env?: EnvVar[];
  resources?: ResourceRequirements;
}

export interface MemcachedSpec {
  size: number;
  image: string;
}

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

export interface StackOperation {
  kind: "up" | "refresh" | "destroy";
  result: "succeeded" | "failed";
  startTime: string;
  endTime: string;
  resourceChanges?: StepCounts;
  message?: string;
}

export interface StackStatus {
  name: string;
  lastOperation?: StackOperation;
  /** What the last successful `up` was made from; equal again means nothing to do. */
  appliedFingerprint?: string;
  /** Consecutive failed attempts, and when the next one is due. */
  attempts?: number;
  nextRetryTime?: string;
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
}

export interface MemcachedStatus extends WorkloadStatus {
  nodes?: string[];
}

export interface App {
  apiVersion: typeof apiVersion;
  kind: "App";
  metadata: ObjectMeta;
  spec: AppSpec;
  status?: WorkloadStatus;
}

export interface Memcached {
  apiVersion: typeof apiVersion;
  kind: "Memcached";
  metadata: ObjectMeta;
  spec: MemcachedSpec;
  status?: MemcachedStatus;
}

export type Workload = App | Memcached;
export type WorkloadKind = Workload["kind"];

export const plurals: Record<WorkloadKind, string> = { App: "apps", Memcached: "memcacheds" };
