// The TypeScript port of kstatus (operator/kube/kstatus) against the Go library it ports, at the
// pinned version (toolchain/kstatus): for every fixture, the same status and the same message.
// The fixtures are upstream's status_compute_test.go cases and the branches those leave out:
// each built-in kind in each state it tells apart, the generic rules, custom resources, and the
// objects Go refuses with an error. All objects go to one process of the binary.
import assert from "node:assert/strict";
import { test } from "node:test";
import { kstatusOf, type Json } from "../../operator/kube/kstatus/index.ts";
import { kstatusAll, kstatusError } from "../helpers/kstatus.ts";

interface Parts {
  readonly metadata?: object;
  readonly spec?: object;
  readonly status?: object | null;
}

function make(apiVersion: string, kind: string, parts: Parts = {}): Json {
  const { metadata, ...rest } = parts;
  return { apiVersion, kind, metadata: { name: "test", namespace: "qual", generation: 1, ...metadata }, ...rest };
}

const cond = (type: string, status: string, reason?: string, message?: string) => ({ type, status, ...(reason ? { reason } : {}), ...(message ? { message } : {}) });
const secondsAgo = (seconds: number) => new Date(Date.now() - seconds * 1000).toISOString().replace(/\.\d+Z$/, "Z");
const deleting = { deletionTimestamp: "2026-11-26T12:00:00Z", finalizers: ["example.com/hold"] };

const pod = (status?: object, metadata?: object) => make("v1", "Pod", { ...(status ? { status } : {}), ...(metadata ? { metadata } : {}) });
const unschedulable = { phase: "Pending", conditions: [cond("PodScheduled", "False", "Unschedulable")] };
const waiting = (name: string, reason: string) => ({ name, state: { waiting: { reason } } });

const sts = (spec: object, status: object) => make("apps/v1", "StatefulSet", { spec, status: { observedGeneration: 1, ...status } });
const stsAll = { replicas: 4, readyReplicas: 4, currentReplicas: 4, updatedReplicas: 4, currentRevision: "r1", updateRevision: "r1" };

const ds = (status: object, metadata?: object) => make("apps/v1", "DaemonSet", { status, ...(metadata ? { metadata } : {}) });
const dsAll = { observedGeneration: 1, desiredNumberScheduled: 4, currentNumberScheduled: 4, updatedNumberScheduled: 4, numberAvailable: 4, numberReady: 4 };

const available = [cond("Progressing", "True", "NewReplicaSetAvailable"), cond("Available", "True")];
const dep = (status: object, spec: object = {}, apiVersion = "apps/v1") => make(apiVersion, "Deployment", { spec, status: { observedGeneration: 1, ...status } });
const depAll = { replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1 };

const rs = (spec: object, status: object) => make("apps/v1", "ReplicaSet", { spec, status: { observedGeneration: 1, ...status } });
const rsAll = { replicas: 2, readyReplicas: 2, availableReplicas: 2, fullyLabeledReplicas: 2 };

const job = (spec: object, status?: object) => make("batch/v1", "Job", { spec, ...(status ? { status } : {}) });
const crd = (conditions?: object[]) => make("apiextensions.k8s.io/v1", "CustomResourceDefinition", conditions ? { status: { conditions } } : {});
const mine = (status?: object | null, metadata?: object) => make("something.example.com/v1", "MyCR", { ...(status !== undefined ? { status } : {}), ...(metadata ? { metadata } : {}) });

const cases: readonly (readonly [string, Json])[] = [
  ["pod: no status", pod()],
  ["pod: running and Ready", pod({ phase: "Running", conditions: [cond("Ready", "True")] })],
  ["pod: succeeded", pod({ phase: "Succeeded", conditions: [cond("Ready", "False", "PodCompleted")] })],
  ["pod: failed", pod({ phase: "Failed", conditions: [cond("Ready", "False", "PodCompleted")] })],
  ["pod: unschedulable for a moment", pod(unschedulable, { creationTimestamp: secondsAgo(0) })],
  ["pod: unschedulable, no creation time", pod(unschedulable)],
  ["pod: unschedulable for a minute", pod(unschedulable, { creationTimestamp: secondsAgo(60) })],
  ["pod: pending, not yet scheduled for another reason", pod({ phase: "Pending", conditions: [cond("PodScheduled", "False", "SchedulerError")] })],
  ["pod: pending", pod({ phase: "Pending" })],
  ["pod: running, not Ready", pod({ phase: "Running", conditions: [cond("Ready", "False")] })],
  ["pod: crash-looping containers", pod({ phase: "Running", containerStatuses: [waiting("nginx", "CrashLoopBackOff"), waiting("sidecar", "ContainerCreating"), { name: "log" }, waiting("init", "CrashLoopBackOff")] })],
  ["pvc: no status", make("v1", "PersistentVolumeClaim")],
  ["pvc: pending", make("v1", "PersistentVolumeClaim", { status: { phase: "Pending" } })],
  ["pvc: bound", make("v1", "PersistentVolumeClaim", { status: { phase: "Bound" } })],
  ["statefulset: no status", make("apps/v1", "StatefulSet")],
  ["statefulset: too few replicas", sts({}, { currentReplicas: 1 })],
  ["statefulset: all", sts({ replicas: 4 }, stsAll)],
  ["statefulset: too few ready", sts({ replicas: 4 }, { ...stsAll, readyReplicas: 2 })],
  ["statefulset: too few current", sts({ replicas: 4 }, { ...stsAll, currentReplicas: 2 })],
  ["statefulset: extra pods", sts({ replicas: 4 }, { ...stsAll, replicas: 8 })],
  ["statefulset: OnDelete", sts({ replicas: 4, updateStrategy: { type: "OnDelete" } }, {})],
  ["statefulset: partition rolling out", sts({ replicas: 4, updateStrategy: { rollingUpdate: { partition: 2 } } }, { ...stsAll, updatedReplicas: 1 })],
  ["statefulset: partition rolled out", sts({ replicas: 4, updateStrategy: { rollingUpdate: { partition: 2 } } }, { ...stsAll, updatedReplicas: 2 })],
  ["statefulset: revisions differ", sts({ replicas: 4 }, { ...stsAll, updateRevision: "r2" })],
  ["daemonset: no status", ds({})],
  ["daemonset: no generation", make("apps/v1", "DaemonSet", { metadata: { generation: undefined }, status: dsAll })],
  ["daemonset: no desired number", ds({ observedGeneration: 1, currentReplicas: 1 })],
  ["daemonset: all", ds(dsAll)],
  ["daemonset: generation not observed", ds(dsAll, { generation: 2 })],
  ["daemonset: too few current", ds({ ...dsAll, currentNumberScheduled: 3 })],
  ["daemonset: too few updated", ds({ ...dsAll, updatedNumberScheduled: 3 })],
  ["daemonset: too few available", ds({ ...dsAll, numberAvailable: 2 })],
  ["daemonset: too few ready", ds({ ...dsAll, numberReady: 2 })],
  ["deployment: no status", make("apps/v1", "Deployment")],
  ["deployment: available", dep({ ...depAll, replicas: 1, conditions: available })],
  ["deployment: not progressing", dep({ ...depAll, conditions: [cond("Progressing", "False", "Some reason"), cond("Available", "True")] }, { progressDeadlineSeconds: 45 })],
  ["deployment: no progress deadline", dep({ ...depAll, conditions: [cond("Available", "True")] })],
  ["deployment: not available", dep({ ...depAll, conditions: [available[0], cond("Available", "False")] })],
  ["deployment: progress deadline exceeded", dep({ ...depAll, conditions: [cond("Progressing", "False", "ProgressDeadlineExceeded", "ReplicaSet web-1 has timed out progressing.")] })],
  ["deployment: too few updated", dep({ ...depAll, replicas: 3, updatedReplicas: 1 }, { replicas: 3 })],
  ["deployment: extra pods", dep({ ...depAll, replicas: 3, conditions: available })],
  ["deployment: too few available", dep({ ...depAll, replicas: 2, updatedReplicas: 2, availableReplicas: 1 }, { replicas: 2 })],
  ["deployment: too few ready", dep({ ...depAll, replicas: 2, updatedReplicas: 2, availableReplicas: 2 }, { replicas: 2 })],
  ["deployment: scaled to zero", dep({ conditions: available }, { replicas: 0 })],
  ["deployment: extensions/v1beta1", dep({ ...depAll, conditions: available }, {}, "extensions/v1beta1")],
  ["deployment: a newer generation", make("apps/v1", "Deployment", { metadata: { generation: 3 }, status: { ...depAll, observedGeneration: 2, conditions: available } })],
  ["deployment: being deleted", make("apps/v1", "Deployment", { metadata: deleting, status: { ...depAll, observedGeneration: 1 } })],
  ["deployment: a kind of another group", make("example.com/v1", "Deployment", { status: { conditions: [cond("Ready", "False", "Waiting", "not yet")] } })],
  ["replicaset: no status", make("apps/v1", "ReplicaSet")],
  ["replicaset: all, ReplicaFailure False", rs({ replicas: 2 }, { ...rsAll, conditions: [cond("ReplicaFailure", "False")] })],
  ["replicaset: all", rs({ replicas: 2 }, rsAll)],
  ["replicaset: too few ready", rs({ replicas: 2 }, { ...rsAll, readyReplicas: 1 })],
  ["replicaset: too few available", rs({ replicas: 2 }, { ...rsAll, availableReplicas: 1 })],
  ["replicaset: replica failure", rs({ replicas: 2 }, { ...rsAll, conditions: [cond("ReplicaFailure", "True", "FailedCreate", "forbidden")] })],
  ["replicaset: extra pods", rs({ replicas: 2 }, { ...rsAll, replicas: 3 })],
  ["pdb: generation not observed", make("policy/v1", "PodDisruptionBudget", { metadata: { generation: 2 }, status: { observedGeneration: 1 } })],
  ["pdb: observed", make("policy/v1beta1", "PodDisruptionBudget", { status: { observedGeneration: 1 } })],
  ["job: no status", job({})],
  ["job: complete", job({}, { succeeded: 1, active: 0, conditions: [cond("Complete", "True")] })],
  ["job: failed", job({ completions: 4 }, { succeeded: 3, failed: 1, conditions: [cond("Failed", "True", "BackoffLimitExceeded")] })],
  ["job: running", job({ completions: 10, parallelism: 2 }, { startTime: "2019-06-04T01:17:13Z", succeeded: 3, failed: 1, active: 2, conditions: [cond("Failed", "False"), cond("Complete", "False")] })],
  ["job: completions from parallelism", job({ parallelism: 3 }, { succeeded: 3, conditions: [cond("Complete", "True")] })],
  ["cronjob: no status", make("batch/v1", "CronJob")],
  ["cronjob: null status", make("batch/v1", "CronJob", { status: null })],
  ["service: ClusterIP", make("v1", "Service")],
  ["service: NodePort", make("v1", "Service", { spec: { type: "NodePort" } })],
  ["service: LoadBalancer with its IP", make("v1", "Service", { spec: { type: "LoadBalancer", clusterIP: "1.2.3.4" } })],
  ["service: LoadBalancer without", make("v1", "Service", { spec: { type: "LoadBalancer" } })],
  ["service: Knative's, a kind of another group", make("serving.knative.dev/v1", "Service", { status: { observedGeneration: 1, conditions: [cond("Ready", "Unknown", "Deploying", "deploying")] } })],
  ["configmap", make("v1", "ConfigMap")],
  ["configmap: being deleted", make("v1", "ConfigMap", { metadata: deleting })],
  ["secret", make("v1", "Secret")],
  ["crd: no conditions", crd()],
  ["crd: installing", crd([cond("NamesAccepted", "True", "NoConflicts"), cond("Established", "False", "Installing")])],
  ["crd: names not accepted", crd([cond("NamesAccepted", "False", "SomeReason", "the plural is taken")])],
  ["crd: not established", crd([cond("NamesAccepted", "True", "NoConflicts"), cond("Established", "False", "Other", "broken")])],
  ["crd: established", crd([cond("NamesAccepted", "True", "NoConflicts"), cond("Established", "True", "InitialNamesAccepted")])],
  ["custom: no status", mine()],
  ["custom: null status", mine(null)],
  ["custom: generation not observed", mine({ observedGeneration: 1 }, { generation: 2 })],
  ["custom: Ready", mine({ conditions: [cond("Ready", "True", "AllOk", "All looks ok")] })],
  ["custom: not Ready", mine({ observedGeneration: 1, conditions: [cond("Ready", "False", "NotReadyYet", "waiting")] })],
  ["custom: Ready Unknown", mine({ conditions: [cond("Ready", "Unknown", "Checking", "checking")] })],
  ["custom: other conditions only", mine({ conditions: [cond("SomeCondition", "False")] })],
  ["custom: Reconciling", mine({ conditions: [cond("Ready", "True"), cond("Reconciling", "True", "Progressing", "rolling out")] })],
  ["custom: Stalled", mine({ conditions: [cond("Stalled", "True", "Refused", "the spec is invalid"), cond("Reconciling", "True", "Progressing", "rolling out")] })],
  ["custom: Reconciling and Stalled False", mine({ conditions: [cond("Reconciling", "False"), cond("Stalled", "False"), cond("Ready", "False", "Waiting", "on a child")] })],
  ["custom: null conditions and fields", mine({ conditions: [null, { type: "Ready", status: "False", reason: null, message: null }] })],
  ["custom: no generation", mine({ observedGeneration: 7, conditions: [cond("Ready", "True")] }, { generation: undefined })],
  ["custom: being deleted while Stalled", mine({ conditions: [cond("Stalled", "True", "DestroyFailed", "no")] }, deleting)],
  ["custom: a Stalled condition of a deployment", dep({ ...depAll, conditions: [...available, cond("Stalled", "True", "Paused", "paused")] })],
];

const errors: readonly (readonly [string, Json])[] = [
  ["pod: an unknown phase", pod({ phase: "Weird" })],
  ["observedGeneration a string", mine({ observedGeneration: "1" }, { generation: 2 })],
  ["observedGeneration not an integer", mine({ observedGeneration: 1.5 }, { generation: 2 })],
  ["observedGeneration null", mine({ observedGeneration: null }, { generation: 2 })],
  ["deletionTimestamp a number", mine(undefined, { deletionTimestamp: 5 })],
  ["status a string", mine("str" as unknown as object)],
  ["conditions a map", mine({ conditions: { Ready: "True" } })],
  ["a condition a string", mine({ conditions: ["Ready"] })],
  ["a condition's status a boolean", mine({ conditions: [{ type: "Ready", status: true }] })],
  ["a condition's message an integer", mine({ conditions: [cond("Ready", "False"), { type: "Ready", status: "False", message: 3 }] })],
  ["containerStatuses a map", pod({ phase: "Running", containerStatuses: { nginx: {} } })],
];

test(`the port reads ${cases.length} objects as kstatus does: the same status and message`, () => {
  const readings = kstatusAll(cases.map(([, object]) => object));
  const now = Date.now();
  for (const [i, [name, object]] of cases.entries()) {
    const port = kstatusOf(object, now);
    const go = readings[i];
    assert.deepEqual({ status: port.status, message: port.message }, go, `${name}: ${JSON.stringify(object)}`);
  }
});

// Upstream's expectedConditions (status_compute_test.go): the binary prints no conditions, so these
// hold the port's to upstream's own tests, by reason.
const upstreamReasons: Readonly<Record<string, string>> = {
  "pod: no status": "PodNotObserved",
  "pod: unschedulable for a moment": "PodNotScheduled",
  "pod: unschedulable, no creation time": "PodUnschedulable",
  "pod: crash-looping containers": "ContainerCrashLooping",
  "pvc: no status": "NotBound",
  "statefulset: too few replicas": "LessReplicas",
  "statefulset: too few ready": "LessReady",
  "statefulset: too few current": "LessCurrent",
  "statefulset: extra pods": "ExtraPods",
  "daemonset: no status": "NoObservedGeneration",
  "daemonset: no desired number": "NoDesiredNumber",
  "daemonset: generation not observed": "LatestGenerationNotObserved",
  "daemonset: too few available": "LessAvailable",
  "deployment: no status": "LessReplicas",
  "deployment: not progressing": "ReplicaSetNotAvailable",
  "deployment: not available": "DeploymentNotAvailable",
  "deployment: progress deadline exceeded": "ProgressDeadlineExceeded",
  "replicaset: no status": "LessLabelled",
  "replicaset: replica failure": "ReplicaFailure",
  "pdb: generation not observed": "LatestGenerationNotObserved",
  "job: no status": "JobNotStarted",
  "job: failed": "JobFailed",
  "service: LoadBalancer without": "NoIPAssigned",
  "crd: no conditions": "Installing",
  "crd: installing": "Installing",
  "crd: names not accepted": "SomeReason",
  "custom: not Ready": "NotReadyYet",
  "custom: generation not observed": "LatestGenerationNotObserved",
};

test("the port's conditions: Reconciling with InProgress, Stalled with Failed, none otherwise, with upstream's reasons", () => {
  const named = new Map(cases);
  for (const name of Object.keys(upstreamReasons)) assert.ok(named.has(name), `no case named ${name}`);
  for (const [name, object] of cases) {
    const { status, conditions } = kstatusOf(object);
    const expected = status === "InProgress" ? ["Reconciling"] : status === "Failed" ? ["Stalled"] : [];
    assert.deepEqual(conditions.map((c) => c.type), expected, name);
    if (upstreamReasons[name]) assert.equal(conditions[0]?.reason, upstreamReasons[name], name);
  }
});

test(`the port throws where kstatus returns an error, with its words (${errors.length} objects)`, () => {
  for (const [name, object] of errors) {
    const go = kstatusError(object);
    assert.ok(go, `${name}: kstatus read it`);
    assert.throws(() => kstatusOf(object), (error: Error) => error.message === go, `${name}: kstatus says ${go}`);
  }
});

test("an object without a kind, as a list's items come, is refused rather than read by the wrong rules", () => {
  assert.throws(() => kstatusOf({ apiVersion: "apps/v1", metadata: { name: "web" }, status: {} }), /Kind' is missing/);
});
