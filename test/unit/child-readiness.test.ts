// Whether an object's children are current (operator/controller/child-readiness.ts): the object's
// Deployment by its rollout, with App's reasons and messages as they were; every other child, of
// any kind, by the kstatus port; and the conditions each verdict writes.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { KubernetesObject, V1Deployment } from "@kubernetes/client-node";
import type { App } from "../../components/app.ts";
import { childrenPhase } from "../../operator/controller/child-readiness.ts";
import type { ChildState } from "../../operator/controller/children.ts";
import { conditionsFor } from "../../operator/controller/conditions.ts";
import { rolloutPhase } from "../../operator/controller/status.ts";

const app: App = { apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name: "web", namespace: "default", uid: "u", generation: 1 }, spec: { image: "nginx", replicas: 2 } };

/** A child of `kind` as the API server has it: `live` as a get returns it, kind and apiVersion included unless `listed`. */
function owned(apiVersion: string, kind: string, name: string, rest: object = {}, listed = false): ChildState {
  const live = { ...(listed ? {} : { apiVersion, kind }), metadata: { name, namespace: "default", generation: 1 }, ...rest } as KubernetesObject;
  return { child: { kind, name, manifest: {} }, state: "owned", live, differences: [], added: [] };
}

const missing = (kind: string, name: string): ChildState => ({ child: { kind, name, manifest: {} }, state: "missing" });

const configMap = owned("v1", "ConfigMap", "settings");
const claim = (phase: string) => owned("v1", "PersistentVolumeClaim", "data", { status: { phase } });
const statefulSet = (readyReplicas: number) =>
  owned("apps/v1", "StatefulSet", "db", { spec: { replicas: 3 }, status: { observedGeneration: 1, replicas: 3, readyReplicas, currentReplicas: 3, updatedReplicas: 3, currentRevision: "r1", updateRevision: "r1" } });
const failedJob = owned("batch/v1", "Job", "migrate", { spec: { completions: 1 }, status: { startTime: "2026-11-28T12:00:00Z", failed: 1, conditions: [{ type: "Failed", status: "True", reason: "BackoffLimitExceeded" }] } });
const widget = (conditions: object[]) => owned("widgets.example.com/v1", "Widget", "w", { status: { observedGeneration: 1, conditions } });

const rollingOut = { metadata: { generation: 1 }, status: { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 1 } } satisfies V1Deployment;
const rolledOut = { metadata: { generation: 1 }, status: { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2, readyReplicas: 2 } } satisfies V1Deployment;
const appDeployment = (deployment: V1Deployment): ChildState => ({ child: { kind: "Deployment", name: "web", manifest: {} }, state: "owned", live: deployment, differences: [], added: [] });

const phaseOf = (...children: ChildState[]) => childrenPhase(app, { children });

/** The three conditions' status and message, as the object would carry them. */
function conditions(...children: ChildState[]): Record<string, string> {
  const written = conditionsFor(phaseOf(...children), 1, [], new Date("2026-11-28T12:00:00Z"));
  return Object.fromEntries(written.map((c) => [c.type, `${c.status} ${c.reason}: ${c.message}`]));
}

test("a child InProgress makes the object Reconciling, ChildProgressing, with the child named and kstatus's words; Ready once it is Current", () => {
  assert.deepEqual(conditions(configMap, claim("Pending")), {
    Ready: "False ChildProgressing: the PersistentVolumeClaim data is not current yet: PVC is not Bound. phase: Pending",
    Reconciling: "True ChildProgressing: the PersistentVolumeClaim data is not current yet: PVC is not Bound. phase: Pending",
    Stalled: "False ChildProgressing: ",
  });
  assert.deepEqual(phaseOf(configMap, statefulSet(1)), { kind: "progressing", reason: "ChildProgressing", message: "the StatefulSet db is not current yet: Ready: 1/3" });
  // Its controller has not seen the newest spec, whatever its counts say.
  const unobserved = owned("apps/v1", "StatefulSet", "db", { metadata: { name: "db", generation: 2 }, spec: { replicas: 0 }, status: { observedGeneration: 1 } });
  assert.deepEqual(phaseOf(unobserved), { kind: "progressing", reason: "ChildProgressing", message: "the StatefulSet db is not current yet: StatefulSet generation is 2, but latest observed generation is 1" });
  // A custom resource's Ready=False without a message: its reason.
  assert.deepEqual(phaseOf(widget([{ type: "Ready", status: "False", reason: "Provisioning" }])), { kind: "progressing", reason: "ChildProgressing", message: "the Widget w is not current yet: Provisioning" });

  assert.deepEqual(conditions(configMap, claim("Bound"), statefulSet(3), widget([{ type: "Ready", status: "True" }])), {
    Ready: "True Available: every child is current",
    Reconciling: "False Available: ",
    Stalled: "False Available: ",
  });
});

test("a child Failed makes the object Stalled, ChildFailed, with kstatus's message, before any child still under way", () => {
  assert.deepEqual(conditions(claim("Pending"), failedJob), {
    Ready: "False ChildFailed: the Job migrate failed: Job Failed. failed: 1/1",
    Reconciling: "False ChildFailed: ",
    Stalled: "True ChildFailed: the Job migrate failed: Job Failed. failed: 1/1",
  });
  const stalledWidget = widget([{ type: "Stalled", status: "True", reason: "QuotaExceeded", message: "no capacity left in the pool" }]);
  assert.deepEqual(phaseOf(configMap, stalledWidget), { kind: "stalled", reason: "ChildFailed", message: "the Widget w failed: no capacity left in the pool" });
});

test("a child missing, being deleted, or with a status kstatus cannot read is not current", () => {
  assert.deepEqual(phaseOf(configMap, missing("PersistentVolumeClaim", "data")), { kind: "progressing", reason: "Creating", message: "the PersistentVolumeClaim data does not exist yet" });
  const deleting = owned("v1", "PersistentVolumeClaim", "data", { metadata: { name: "data", deletionTimestamp: "2026-11-28T12:00:00Z" }, status: { phase: "Bound" } });
  assert.deepEqual(phaseOf(deleting), { kind: "progressing", reason: "ChildProgressing", message: "the PersistentVolumeClaim data is being deleted" });
  const garbled = owned("widgets.example.com/v1", "Widget", "w", { status: { conditions: "Ready" } });
  assert.deepEqual(phaseOf(garbled), { kind: "progressing", reason: "ChildProgressing", message: "the status of the Widget w cannot be read: cannot restore slice from string" });
});

test("a Deployment keeps its rollout's reasons and messages; another child can hold it back from Ready or make it Stalled", () => {
  const service = owned("v1", "Service", "web", { spec: { type: "ClusterIP", clusterIP: "10.0.0.1" } });
  const policy = owned("networking.k8s.io/v1", "NetworkPolicy", "web");
  const observed = (deployment: V1Deployment | undefined, ...others: ChildState[]) => ({ children: [deployment ? appDeployment(deployment) : missing("Deployment", "web"), ...others], deployment });
  // An App's children: exactly what the rollout alone says, in every state.
  for (const deployment of [undefined, rollingOut, rolledOut, { ...rolledOut, spec: { paused: true, selector: {}, template: {} } }]) {
    assert.deepEqual(childrenPhase(app, observed(deployment, service, policy)), rolloutPhase(app, deployment));
  }
  assert.deepEqual(childrenPhase(app, observed(rolledOut, service, policy)), { kind: "ready", message: "2 of 2 replicas available" });
  // The rollout's reason comes first (the pods' trouble refines it), then the other children's.
  assert.deepEqual(childrenPhase(app, observed(rollingOut, claim("Pending"))), { kind: "progressing", reason: "RollingOut", message: "1 of 2 updated replicas available" });
  assert.deepEqual(childrenPhase(app, observed(rolledOut, claim("Pending"))), { kind: "progressing", reason: "ChildProgressing", message: "the PersistentVolumeClaim data is not current yet: PVC is not Bound. phase: Pending" });
  assert.deepEqual(childrenPhase(app, observed(rollingOut, failedJob)), { kind: "stalled", reason: "ChildFailed", message: "the Job migrate failed: Job Failed. failed: 1/1" });
  // A second Deployment is any other child: kstatus reads it, kind and apiVersion taken from its declaration when a list item lacks them.
  const stuckStatus = { status: { observedGeneration: 1, replicas: 1, updatedReplicas: 1, conditions: [{ type: "Progressing", status: "False", reason: "ProgressDeadlineExceeded", message: "too slow" }] } };
  const worker = owned("apps/v1", "Deployment", "worker", stuckStatus, true);
  assert.deepEqual(childrenPhase(app, observed(rolledOut, worker)), { kind: "stalled", reason: "ChildFailed", message: "the Deployment worker failed: Progress deadline exceeded" });
});
