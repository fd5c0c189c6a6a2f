// spec.suspend and the reconcile request as pure decisions: what a suspended object reports (and
// how kstatus's inputs read), when a new generation needs no Pulumi run, and what a request runs.
import assert from "node:assert/strict";
import { test } from "node:test";
import { reconcileRequestAnnotation } from "../../crds/types.ts";
import type { App, AppSpec } from "../../components/app.ts";
import { conditionsFor } from "../../operator/controller/conditions.ts";
import { appliedNow, decide, decodeApplied, encodeApplied, programVersion, specDigest, type Applied } from "../../operator/controller/drift.ts";
import { pendingRequest, withRequest } from "../../operator/controller/reconcile-request.ts";
import { observedGeneration } from "../../operator/controller/status.ts";
import { suspendedPhase } from "../../operator/controller/suspension.ts";

const spec: AppSpec = { image: "nginx:1.27", replicas: 2 };
const applied: Applied = { programVersion, generation: 2, spec: specDigest(spec) };
const ready = { kind: "ready", message: "2 of 2 replicas available" } as const;

test("spec.suspend alone changes nothing the children are made from: the new generation is applied as it is, with no Pulumi run", () => {
  assert.equal(specDigest({ ...spec, suspend: true }), specDigest(spec));
  assert.notEqual(specDigest({ ...spec, replicas: 3 }), specDigest(spec));
  assert.deepEqual(appliedNow(applied, 3, specDigest({ ...spec, suspend: true }), programVersion), { ...applied, generation: 3 });
  assert.equal(decide({ program: programVersion, generation: 3, applied: appliedNow(applied, 3, specDigest(spec), programVersion), drift: [], orphanedState: false }).action, "none");
  // Another spec, a record without a digest (an older operator's), another program: applied anew.
  assert.equal(appliedNow(applied, 3, specDigest({ ...spec, replicas: 3 }), programVersion), applied);
  const { spec: _digest, ...older } = applied;
  assert.deepEqual(appliedNow(older, 3, specDigest(spec), programVersion), older);
  assert.equal(appliedNow({ ...applied, programVersion: "0" }, 3, specDigest(spec), programVersion)?.generation, 2);
  // The digest survives the round trip through status; a record without one still reads.
  assert.deepEqual(decodeApplied(encodeApplied(applied)), applied);
  assert.deepEqual(decodeApplied(`v=${programVersion};g=2`), { programVersion, generation: 2 });
});

test("suspended with nothing held back: Ready=True reason Suspended once the rollout is complete, the rollout's own phase before", () => {
  const phase = suspendedPhase({ program: programVersion, generation: 2, applied, drift: [], rollout: ready });
  assert.equal(phase.kind, "suspended");
  assert.match(phase.message, /^2 of 2 replicas available; suspended \(spec\.suspend\)/);
  const conditions = conditionsFor(phase, 2);
  assert.deepEqual(conditions.map((c) => [c.type, c.status, c.reason]), [["Ready", "True", "Suspended"], ["Reconciling", "False", "Suspended"], ["Stalled", "False", "Suspended"]]);
  const rolling = { kind: "progressing", reason: "RollingOut", message: "1 of 2 replicas updated" } as const;
  assert.deepEqual(suspendedPhase({ program: programVersion, generation: 2, applied, drift: [], rollout: rolling }), rolling);
});

test("suspended with a spec not applied or drift not repaired: Ready=False reason Suspended, not Reconciling, not Stalled, observedGeneration the applied one", () => {
  const changed = suspendedPhase({ program: programVersion, generation: 3, applied, drift: ["Deployment web: spec.replicas: 2, want 3"], rollout: ready });
  assert.deepEqual(changed.kind === "suspended" && changed.current, false);
  assert.match(changed.message, /held back: spec changed \(generation 2 -> 3\); the live children differ from it: Deployment web: spec\.replicas: 2, want 3$/);
  assert.deepEqual(conditionsFor(changed, 3).map((c) => [c.type, c.status, c.reason, c.observedGeneration]), [["Ready", "False", "Suspended", 3], ["Reconciling", "False", "Suspended", 3], ["Stalled", "False", "Suspended", 3]]);
  assert.equal(observedGeneration(3, changed, { name: "s", appliedFingerprint: encodeApplied(applied) }), 2, "kstatus reads the new generation as not applied");

  const drifted = suspendedPhase({ program: programVersion, generation: 2, applied, drift: ["Deployment web: spec.replicas: 5, want 2"], rollout: ready });
  assert.match(drifted.message, /held back: drift: Deployment web: spec\.replicas: 5, want 2$/);
  assert.equal(conditionsFor(drifted, 2)[0]!.status, "False");
  assert.match(suspendedPhase({ program: programVersion, generation: 1, applied: undefined, drift: ["Deployment web: missing"], rollout: ready }).message, /held back: never applied/);
});

const app = (annotations: Record<string, string>, status: App["status"] = {}, suspend?: boolean): App => ({
  apiVersion: "appstack.dev/v1alpha1",
  kind: "App",
  metadata: { name: "web", namespace: "default", uid: "u", generation: 2, annotations },
  spec: { ...spec, ...(suspend === undefined ? {} : { suspend }) },
  status,
});

test("a reconcile request: pending until its value is recorded as handled; none while suspended; a refresh and an up whatever was decided", () => {
  const requested = { [reconcileRequestAnnotation]: "2026-11-26T14:00:00Z" };
  assert.equal(pendingRequest(app({})), undefined);
  assert.equal(pendingRequest(app(requested)), "2026-11-26T14:00:00Z");
  assert.equal(pendingRequest(app(requested, { lastHandledReconcileAt: "2026-11-26T14:00:00Z" })), undefined);
  assert.equal(pendingRequest(app(requested, { lastHandledReconcileAt: "2026-11-26T13:00:00Z" })), "2026-11-26T14:00:00Z");
  assert.equal(pendingRequest(app(requested, {}, true)), undefined, "a suspended object handles no request");

  assert.deepEqual(withRequest({ action: "none" }, undefined), { action: "none" });
  assert.deepEqual(withRequest({ action: "none" }, "r1"), { action: "apply", reason: `reconcile requested (${reconcileRequestAnnotation}: r1)`, refresh: true, cause: "requested", requested: "r1" });
  assert.deepEqual(withRequest({ action: "apply", reason: "spec changed (generation 1 -> 2)", refresh: false, cause: "spec" }, "r1"), { action: "apply", reason: "spec changed (generation 1 -> 2)", refresh: true, cause: "spec", requested: "r1" });
  assert.deepEqual(withRequest({ action: "repair", reason: "drift: x" }, "r1"), { action: "repair", reason: "drift: x", requested: "r1" });
});
