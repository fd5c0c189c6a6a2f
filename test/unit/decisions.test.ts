// The pure decisions of the operator: stack names, when Pulumi runs, and what status says.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Deployment, V1Pod } from "@kubernetes/client-node";
import type { App } from "../../components/app.ts";
import { conditionsFor } from "../../operator/controller/conditions.ts";
import { decide, decodeApplied, encodeApplied, programVersion, type Applied, type DecisionInput } from "../../operator/controller/drift.ts";
import { stackName } from "../../operator/pulumi/stack-names.ts";
import { engineMessage } from "../../operator/pulumi/stack-errors.ts";
import { backoffResetMs, FailingSince } from "../../operator/controller/pod-trouble.ts";
import { observedGeneration, rolloutPhase, withPodTrouble } from "../../operator/controller/status.ts";

test("stack names are unique per kind, namespace and name, and valid for Pulumi even for 253-character names", () => {
  assert.equal(stackName("App", "default", "web"), "app.default.web");
  assert.notEqual(stackName("App", "a-b", "c"), stackName("App", "a", "b-c"));
  assert.notEqual(stackName("App", "ns", "web"), stackName("Memcached", "ns", "web"));
  const long = "x".repeat(253);
  const a = stackName("App", "n".repeat(63), long);
  const b = stackName("App", "n".repeat(63), long.slice(0, 252) + "y");
  assert.ok(a.length <= 100);
  assert.notEqual(a, b);
  assert.match(a, /^[a-zA-Z0-9._-]+$/);
});

const applied: Applied = { programVersion, generation: 2 };
const decision = (over: Partial<DecisionInput>) => decide({ program: programVersion, generation: 2, applied, drift: [], orphanedState: false, ...over });

test("the applied record survives a round trip through status; older records read as none", () => {
  assert.deepEqual(decodeApplied(encodeApplied(applied)), applied);
  assert.equal(decodeApplied("v=1;g=2;d=uid@3;s="), undefined);
  assert.equal(decodeApplied("garbage"), undefined);
});

test("nothing changed and nothing differs means no Pulumi run", () => {
  assert.deepEqual(decision({}), { action: "none" });
});

test("a spec change applies, a difference in the live children repairs", () => {
  assert.deepEqual(decision({ generation: 3 }), { action: "apply", reason: "spec changed (generation 2 -> 3)", refresh: false, cause: "spec" });
  assert.deepEqual(decision({ applied: undefined }), { action: "apply", reason: "never applied", refresh: false, cause: "created" });
  assert.equal(decision({ applied: { ...applied, programVersion: "0" } }).action, "apply");
  const repair = decision({ drift: ["Deployment web: spec.replicas: 5, want 2", "Service web: missing"] });
  assert.equal(repair.action, "repair");
  assert.match(repair.action === "repair" ? repair.reason : "", /spec\.replicas: 5, want 2; Service web: missing/);
});

test("a new object whose stack already records resources is refreshed before anything is applied", () => {
  const fresh = decision({ applied: undefined, orphanedState: true });
  assert.equal(fresh.action === "apply" && fresh.refresh, true);
});

const app = (replicas: number): App => ({
  apiVersion: "appstack.dev/v1alpha1",
  kind: "App",
  metadata: { name: "web", namespace: "default", uid: "u", generation: 1 },
  spec: { image: "nginx", replicas },
});

const deployment = (status: V1Deployment["status"], generation = 1): V1Deployment => ({ metadata: { generation }, status: { observedGeneration: generation, ...status } });

test("Ready only when the rollout is complete", () => {
  assert.equal(rolloutPhase(app(2), undefined).kind, "progressing");
  assert.equal(rolloutPhase(app(2), deployment({ replicas: 2, updatedReplicas: 2, availableReplicas: 1 })).kind, "progressing");
  assert.equal(rolloutPhase(app(2), deployment({ replicas: 3, updatedReplicas: 2, availableReplicas: 2 })).kind, "progressing");
  // Scaled down from 5: the controller has seen the spec, and three pods are still to go.
  assert.deepEqual(rolloutPhase(app(2), deployment({ replicas: 5, updatedReplicas: 5, availableReplicas: 5, readyReplicas: 5 })), { kind: "progressing", reason: "RollingOut", message: "scaling down: 5 replicas, want 2" });
  assert.equal(rolloutPhase(app(2), { metadata: { generation: 2 }, status: { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2 } }).kind, "progressing");
  assert.equal(rolloutPhase(app(2), deployment({ replicas: 2, updatedReplicas: 2, availableReplicas: 2, readyReplicas: 2 })).kind, "ready");
  assert.equal(rolloutPhase(app(0), deployment({})).kind, "ready");
  const stuck = deployment({ conditions: [{ type: "Progressing", status: "False", reason: "ProgressDeadlineExceeded", message: "too slow" }] });
  assert.deepEqual(rolloutPhase(app(2), stuck), { kind: "stalled", reason: "ProgressDeadlineExceeded", message: "too slow" });
});

test("a paused Deployment is never Ready: Stalled with DeploymentPaused, whatever its replicas say", () => {
  const paused: V1Deployment = { ...deployment({ replicas: 2, updatedReplicas: 2, availableReplicas: 2, readyReplicas: 2 }), spec: { paused: true, selector: {}, template: {} } };
  assert.deepEqual(rolloutPhase(app(2), paused), { kind: "stalled", reason: "DeploymentPaused", message: "the Deployment is paused (spec.paused): nothing rolls out until it is resumed" });
  assert.equal(rolloutPhase(app(2), { ...paused, spec: { ...paused.spec!, paused: false } }).kind, "ready");
});

test("a rollout waiting on a pod the scheduler cannot place says so, with the scheduler's words, and stays Reconciling", () => {
  const rolling = rolloutPhase(app(2), deployment({ replicas: 2, updatedReplicas: 2, availableReplicas: 1 }));
  const pending: V1Pod = { metadata: { name: "web-1", creationTimestamp: new Date(0) }, status: { conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable", message: "0/2 nodes are available: 2 Insufficient memory." }] } };
  const scheduled: V1Pod = { metadata: { name: "web-0" }, status: { conditions: [{ type: "PodScheduled", status: "True" }] } };
  // A cluster autoscaler adds nodes for it: never Stalled by the pod-start bound.
  assert.deepEqual(withPodTrouble(rolling, [scheduled, pending], 1_000), { phase: { kind: "progressing", reason: "Unschedulable", message: "1 of 2 pods cannot start: pod web-1 cannot be scheduled: 0/2 nodes are available: 2 Insufficient memory." } });
  assert.equal(withPodTrouble(rolling, [scheduled], 1_000).phase, rolling);
  // Ready, stalled, applying: not about the pods.
  const ready = rolloutPhase(app(0), deployment({}));
  assert.equal(withPodTrouble(ready, [pending], 1_000).phase, ready);
  const applying = { kind: "progressing" as const, reason: "Applying" as const, message: "up" };
  assert.equal(withPodTrouble(applying, [pending], 1_000).phase, applying);
});

test("pods that cannot start are named with the kubelet's reason, and Stalled once they have waited out the bound", () => {
  const rolling = rolloutPhase(app(2), deployment({ replicas: 2, updatedReplicas: 2, availableReplicas: 0 }));
  const created = new Date("2026-01-01T00:00:00Z");
  const pulling = (name: string): V1Pod => ({
    metadata: { name, creationTimestamp: created },
    status: { containerStatuses: [{ name: "app", image: "registry.example/web:1", imageID: "", ready: false, restartCount: 0, state: { waiting: { reason: "ImagePullBackOff", message: 'Back-off pulling image "registry.example/web:1"' } } }] },
  });
  const early = withPodTrouble(rolling, [pulling("web-a"), pulling("web-b")], 120_000, new Date(created.getTime() + 30_000));
  assert.deepEqual(early.phase, { kind: "progressing", reason: "ImagePullBackOff", message: '2 of 2 pods cannot start: pod web-a: container app ImagePullBackOff (image registry.example/web:1): Back-off pulling image "registry.example/web:1"' });
  assert.equal(early.recheckInMs, 90_000, "checked again when the bound is reached, pod event or not");
  const late = withPodTrouble(rolling, [pulling("web-a")], 120_000, new Date(created.getTime() + 120_000));
  assert.equal(late.phase.kind, "stalled");
  assert.equal((late.phase as { reason: string }).reason, "ImagePullBackOff");
  assert.match((late.phase as { message: string }).message, /not started for 120 s/);
  assert.equal(late.recheckInMs, undefined);

  const crashing: V1Pod = {
    metadata: { name: "web-c", creationTimestamp: created },
    status: { containerStatuses: [{ name: "app", image: "web:1", imageID: "", ready: false, restartCount: 4, state: { waiting: { reason: "CrashLoopBackOff", message: "back-off 40s restarting failed container=app" } }, lastState: { terminated: { exitCode: 3, reason: "Error", finishedAt: new Date("2026-01-01T00:01:00Z") } } }] },
  };
  assert.match((withPodTrouble(rolling, [crashing], 120_000, created).phase as { message: string }).message, /container app CrashLoopBackOff: back-off 40s restarting failed container=app; last exit code 3 \(Error\) at 2026-01-01T00:01:00.000Z/);
  const unconfigured: V1Pod = {
    metadata: { name: "web-d", creationTimestamp: created },
    status: { initContainerStatuses: [], containerStatuses: [{ name: "app", image: "web:1", imageID: "", ready: false, restartCount: 0, state: { waiting: { reason: "CreateContainerConfigError", message: 'secret "db" not found' } } }] },
  };
  assert.deepEqual(withPodTrouble(rolling, [unconfigured], 120_000, created).phase, { kind: "progressing", reason: "CreateContainerConfigError", message: '1 of 1 pods cannot start: pod web-d: container app CreateContainerConfigError: secret "db" not found' });
  // Starting normally is no trouble.
  const starting: V1Pod = { metadata: { name: "web-e", creationTimestamp: created }, status: { containerStatuses: [{ name: "app", image: "web:1", imageID: "", ready: false, restartCount: 0, state: { waiting: { reason: "ContainerCreating" } } }] } };
  assert.equal(withPodTrouble(rolling, [starting], 120_000, new Date(created.getTime() + 600_000)).phase, rolling);
});

test("a crash loop counts from when the container began failing, not from the pod's creation", () => {
  const rolling = rolloutPhase(app(1), deployment({ replicas: 1, updatedReplicas: 1, availableReplicas: 0 }));
  const created = new Date("2026-01-01T00:00:00Z");
  const firstCrash = new Date("2026-01-04T00:00:00Z");
  const at = (ms: number) => new Date(firstCrash.getTime() + ms);
  const pod = (container: V1Pod["status"]): V1Pod => ({ metadata: { name: "web-a", uid: "u-1", creationTimestamp: created }, status: container });
  const crashed = (lastRun: { startedAt: Date; finishedAt: Date }) =>
    pod({ containerStatuses: [{ name: "app", image: "web:1", imageID: "", ready: false, restartCount: 3, state: { waiting: { reason: "CrashLoopBackOff" } }, lastState: { terminated: { exitCode: 1, ...lastRun } } }] });
  const running = (startedAt: Date) => pod({ containerStatuses: [{ name: "app", image: "web:1", imageID: "", ready: true, restartCount: 3, state: { running: { startedAt } } }] });
  const memory = new FailingSince();
  const phaseAt = (p: V1Pod, now: Date, remember = memory) => withPodTrouble(rolling, [p], 120_000, now, remember);

  // It ran for three days, then crashed: 30 s into its trouble, not three days.
  const afterDays = phaseAt(crashed({ startedAt: created, finishedAt: firstCrash }), at(30_000));
  assert.deepEqual([afterDays.phase.kind, afterDays.recheckInMs], ["progressing", 90_000]);
  // Its short runs since then continue the same loop: the start is remembered, not moved.
  const shortRun = crashed({ startedAt: at(10_000), finishedAt: at(11_000) });
  assert.deepEqual([phaseAt(shortRun, at(60_000)).phase.kind, phaseAt(shortRun, at(60_000)).recheckInMs], ["progressing", 60_000]);
  assert.equal(phaseAt(shortRun, at(120_000)).phase.kind, "stalled");
  // An operator that first sees the loop after a short run counts from that run's start: later than the truth, never earlier.
  assert.equal(phaseAt(shortRun, at(60_000), new FailingSince()).recheckInMs, 70_000);
  // A run past the kubelet's backoff reset ends the loop; the next crash starts a new one.
  phaseAt(running(at(200_000)), at(200_000 + backoffResetMs));
  const again = at(200_000 + backoffResetMs + 5_000);
  assert.equal(phaseAt(crashed({ startedAt: at(200_000), finishedAt: again }), at(200_000 + backoffResetMs + 20_000)).recheckInMs, 105_000);
});

test("pods the API server refuses (ReplicaFailure, FailedCreate) are Stalled at once, in the API server's words", () => {
  const words = 'pods "web-5d8f" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false)';
  const refused = deployment({ replicas: 0, updatedReplicas: 0, availableReplicas: 0, conditions: [{ type: "ReplicaFailure", status: "True", reason: "FailedCreate", message: words }] });
  assert.deepEqual(rolloutPhase(app(2), refused), { kind: "stalled", reason: "FailedCreate", message: `the API server refuses the pods: ${words}` });
  // Once the pods are all there, a leftover condition says nothing.
  const done = deployment({ replicas: 2, updatedReplicas: 2, availableReplicas: 2, conditions: [{ type: "ReplicaFailure", status: "True", reason: "FailedCreate", message: words }] });
  assert.equal(rolloutPhase(app(2), done).kind, "ready");
  const cleared = deployment({ replicas: 0, updatedReplicas: 0, availableReplicas: 0, conditions: [{ type: "ReplicaFailure", status: "False", reason: "FailedCreate", message: words }] });
  assert.equal(rolloutPhase(app(2), cleared).kind, "progressing");
});

test("conditions follow kstatus and keep their transition time while unchanged", () => {
  const t0 = new Date("2026-01-01T00:00:00Z");
  const t1 = new Date("2026-01-01T00:01:00Z");
  const progressing = conditionsFor({ kind: "progressing", reason: "Applying", message: "up" }, 1, [], t0);
  assert.deepEqual(progressing.map((c) => [c.type, c.status]), [["Ready", "False"], ["Reconciling", "True"], ["Stalled", "False"]]);
  const ready = conditionsFor({ kind: "ready", message: "2 of 2" }, 1, progressing, t1);
  assert.deepEqual(ready.map((c) => [c.type, c.status, c.lastTransitionTime]), [
    ["Ready", "True", t1.toISOString()],
    ["Reconciling", "False", t1.toISOString()],
    ["Stalled", "False", t0.toISOString()],
  ]);
  const stalled = conditionsFor({ kind: "stalled", reason: "StackUpdateFailed", message: "boom" }, 2, ready, t1);
  assert.equal(stalled.find((c) => c.type === "Stalled")?.status, "True");
  assert.ok(stalled.every((c) => c.observedGeneration === 2));
});

test("observedGeneration is the generation applied, the object's own while Stalled, and 0 before any is applied", () => {
  const stack = (generation?: number) => ({ name: "s", ...(generation ? { appliedFingerprint: encodeApplied({ programVersion, generation }) } : {}) });
  const awaiting = { kind: "awaiting", message: "plan 0123456789ab" } as const;
  assert.equal(observedGeneration(4, awaiting, stack(3)), 3, "a spec waiting for approval is not applied");
  assert.equal(observedGeneration(4, { kind: "progressing", reason: "Applying", message: "up" }, stack(3)), 3);
  assert.equal(observedGeneration(4, { kind: "ready", message: "1 of 1" }, stack(4)), 4);
  assert.equal(observedGeneration(4, { kind: "progressing", reason: "RollingOut", message: "0 of 1" }, stack(4)), 4);
  assert.equal(observedGeneration(4, awaiting, stack(4)), 4, "drift waiting for approval: the spec is applied");
  assert.equal(observedGeneration(4, { kind: "stalled", reason: "StackUpdateFailed", message: "boom" }, stack(3)), 4);
  assert.equal(observedGeneration(1, awaiting, stack()), 0);
});

test("the engine's failure reads as its diagnosis, once, without URNs or framing", () => {
  const output = [
    '+  kubernetes:apps/v1:Deployment cache creating (0s) error: resource "urn:pulumi:memcached.b.cache::appstack::appstack:apps:Memcached$kubernetes:apps/v1:Deployment::cache" was not successfully created by the Kubernetes API server: Deployment.apps "cache" is invalid: spec.template.spec.containers[0].image: Required value',
    '+  kubernetes:apps/v1:Deployment cache **creating failed** error: resource "urn:pulumi:memcached.b.cache::appstack::appstack:apps:Memcached$kubernetes:apps/v1:Deployment::cache" was not successfully created by the Kubernetes API server: Deployment.apps "cache" is invalid: spec.template.spec.containers[0].image: Required value',
    "+  pulumi:pulumi:Stack appstack-memcached.b.cache creating (0s) error: update failed",
    "error: update failed",
  ].join("\n");
  assert.equal(
    engineMessage(new Error(output)),
    'was not successfully created by the Kubernetes API server: Deployment.apps "cache" is invalid: spec.template.spec.containers[0].image: Required value',
  );
  assert.equal(engineMessage(new Error("spawn pulumi ENOENT")), "spawn pulumi ENOENT");
  // A failed preview: the reason is the bullet under the provider's framing.
  const preview = [
    " ~  kubernetes:apps/v1:Deployment gated updating (0s) [diff: ~spec]; error: Preview failed: 1 error occurred:",
    '    \t* the Kubernetes API server reported that "default/gated" failed to fully initialize or become live: Deployment.apps "gated" is invalid: spec.template.spec.containers[0].ports[1].name: Duplicate value: "http"',
    "    pulumi:pulumi:Stack appstack-app.default.gated  error: preview failed",
  ].join("\n");
  assert.match(engineMessage(new Error(preview)), /^the Kubernetes API server reported .*Duplicate value: "http"$/);
});
