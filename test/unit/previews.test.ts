// Previews without an engine: the approval gate's rules, the engine events turned into steps, and
// the plan store's naming and clean-up.
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { EngineEvent } from "@pulumi/pulumi/automation/index.js";
import { childManifests } from "../../components/kinds.ts";
import type { PreviewStatus } from "../../crds/types.ts";
import type { App } from "../../components/app.ts";
import { ownedLeftover } from "../../operator/controller/additions.ts";
import { summarize } from "../../operator/controller/children.ts";
import { withRemovals } from "../../operator/controller/removals.ts";
import { gate, type GateInput } from "../../operator/controller/approval.ts";
import { previewBasis, programVersion } from "../../operator/controller/drift.ts";
import { PlanStore } from "../../operator/pulumi/plans.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";
import { FileStore } from "../../operator/pulumi/state-store.ts";
import { describeChanges, describeSteps, hasChanges, StepCollector } from "../../operator/pulumi/preview-steps.ts";

const basis = previewBasis(programVersion, 3, ["Deployment web: spec.replicas: 1, want 3"]);
const waiting: PreviewStatus = { planId: "aaaaaaaaaaaa", generation: 3, basis, reason: "spec changed", time: "", changes: { update: 1 }, steps: [] };
const changed = { action: "apply", reason: "spec changed", refresh: false, cause: "spec" } as const;
const stored = (id: string) => (id === waiting.planId ? `/plans/${id}.json` : undefined);
const input = (over: Partial<GateInput>): GateInput => ({ decision: changed, basis, preview: waiting, findPlan: stored, ...over });

test("the basis of a preview changes with the generation and with what differs in the children", () => {
  const drift = ["Deployment web: spec.replicas: 1, want 3"];
  assert.notEqual(previewBasis(programVersion, 4, drift), basis);
  assert.notEqual(previewBasis(programVersion, 3, [...drift, "Service web: spec.type: \"NodePort\", want \"ClusterIP\""]), basis);
  assert.notEqual(previewBasis(programVersion, 3, []), basis);
  assert.equal(previewBasis(programVersion, 3, [...drift]), basis);
  // An addition is the same before and after the preview's handover made it appstack's to remove.
  const env = "Deployment web: spec.template.spec.containers[app].env[EXTRA]";
  assert.equal(previewBasis(programVersion, 3, [`${env}: added by kubectl-set`]), previewBasis(programVersion, 3, [`${env}: ${ownedLeftover}`]));
  assert.notEqual(previewBasis(programVersion, 3, [`${env}: added by kubectl-set`]), previewBasis(programVersion, 3, ["Deployment web: spec.paused: added by kubectl-set"]));
});

test("a preview names what the repair removes beyond Pulumi's plan: an update of each child with additions", () => {
  const app: App = { apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name: "web", namespace: "default", uid: "u", generation: 1 }, spec: { image: "nginx", replicas: 1, port: 80 } };
  const [deployment, service] = childManifests(app);
  const owned = (child: typeof deployment, added: string[]) => ({ child: child!, state: "owned" as const, live: {}, differences: added, added });
  const observed = summarize([owned(deployment, ["spec.paused: added by kubectl-rollout", "spec.template.spec.hostNetwork: added by kubectl-patch"]), owned(service, [])]);
  const pulumi = { steps: [{ type: "kubernetes:apps/v1:Deployment", name: "web", step: "same" }, { type: "kubernetes:core/v1:Service", name: "web", step: "same" }], changes: { same: 2 } };
  const planned = withRemovals(pulumi, observed);
  assert.deepEqual(planned.changes, { update: 1, same: 1 });
  assert.equal(describeSteps(planned.steps), "Deployment web (update: spec.paused, spec.template.spec.hostNetwork)");
  assert.ok(hasChanges(planned.changes));
  // Beside Pulumi's own update of the same Deployment: one step, both paths.
  const both = withRemovals({ steps: [{ type: "kubernetes:apps/v1:Deployment", name: "web", step: "update", paths: ["spec.replicas"] }], changes: { update: 1 } }, observed);
  assert.deepEqual(both.steps[0]!.paths, ["spec.paused", "spec.replicas", "spec.template.spec.hostNetwork"]);
  assert.deepEqual(withRemovals(pulumi, summarize([owned(deployment, [])])), pulumi);
});

test("without an approval: preview once per basis, then wait; nothing to change means settled", () => {
  assert.deepEqual(gate(input({ preview: undefined })), { action: "preview" });
  assert.deepEqual(gate(input({})), { action: "wait" });
  assert.deepEqual(gate(input({ preview: { ...waiting, basis: "older" } })), { action: "preview" });
  assert.deepEqual(gate(input({ decision: { action: "none" } })), { action: "settled" });
});

test("an approval of the waiting plan for an unchanged basis applies exactly that stored plan", () => {
  assert.deepEqual(gate(input({ approval: waiting.planId })), { action: "apply", planId: waiting.planId, planFile: `/plans/${waiting.planId}.json` });
});

test("approvals are refused when the spec changed, the id is not the waiting plan, the plan is lost, or nothing waits", () => {
  const stale = gate(input({ approval: waiting.planId, basis: "newer" }));
  assert.equal(stale.action, "preview");
  assert.match("refused" in stale ? (stale.refused ?? "") : "", /changed since plan aaaaaaaaaaaa/);

  const wrong = gate(input({ approval: "bbbbbbbbbbbb" }));
  assert.equal(wrong.action, "wait", "a wrong id keeps the waiting preview");
  assert.match("refused" in wrong ? (wrong.refused ?? "") : "", /not the waiting preview \(aaaaaaaaaaaa\)/);

  const lost = gate(input({ approval: waiting.planId, findPlan: () => undefined }));
  assert.equal(lost.action, "preview");
  assert.match("refused" in lost ? (lost.refused ?? "") : "", /no longer stored/);

  const nothing = gate(input({ approval: waiting.planId, decision: { action: "none" } }));
  assert.equal(nothing.action, "settled");
  assert.match("refused" in nothing ? (nothing.refused ?? "") : "", /no changes are waiting/);
});

function pre(op: string, type: string, name: string, extra: Record<string, unknown> = {}): EngineEvent {
  const urn = `urn:pulumi:s::appstack::${type}::${name}`;
  return { sequence: 0, timestamp: 0, resourcePreEvent: { metadata: { op, urn, type, provider: "", ...extra } } } as unknown as EngineEvent;
}

test("engine events become one step per resource: the root stack left out, replacements as one, paths sorted", () => {
  const collector = new StepCollector();
  for (const event of [
    pre("same", "pulumi:pulumi:Stack", "appstack-s"),
    pre("create", "kubernetes:core/v1:Service", "web", { detailedDiff: { spec: {} } }),
    pre("update", "kubernetes:apps/v1:Deployment", "web", { detailedDiff: { "spec.template.spec.containers[0].image": {}, "spec.replicas": {} } }),
    pre("create-replacement", "kubernetes:core/v1:ConfigMap", "cfg", { diffs: ["data"] }),
    pre("replace", "kubernetes:core/v1:ConfigMap", "cfg", { diffs: ["data"] }),
    pre("delete-replaced", "kubernetes:core/v1:ConfigMap", "cfg"),
    { sequence: 1, timestamp: 0, stdoutEvent: { message: "", color: "" } } as EngineEvent,
  ]) {
    collector.onEvent(event);
  }
  const { steps, changes } = collector.result();
  assert.deepEqual(steps, [
    { type: "kubernetes:core/v1:Service", name: "web", step: "create" },
    { type: "kubernetes:apps/v1:Deployment", name: "web", step: "update", paths: ["spec.replicas", "spec.template.spec.containers[0].image"] },
    { type: "kubernetes:core/v1:ConfigMap", name: "cfg", step: "replace", paths: ["data"] },
  ]);
  assert.deepEqual(changes, { create: 1, update: 1, replace: 1 });
  assert.equal(describeChanges(changes), "1 to create, 1 to update, 1 to replace");
  assert.equal(describeSteps(steps), "Service web (create); Deployment web (update: spec.replicas, spec.template.spec.containers[0].image); ConfigMap cfg (replace: data)");
});

test("only steps that change something count as changes", () => {
  assert.equal(hasChanges({ same: 4 }), false);
  assert.equal(hasChanges({ same: 4, read: 1 }), false);
  assert.equal(hasChanges({ same: 3, update: 1 }), true);
  assert.equal(hasChanges({ delete: 1 }), true);
  assert.equal(describeChanges({ same: 4 }), "no changes");
  assert.equal(describeChanges({ same: 1, create: 2, update: 1 }, "done"), "2 created, 1 updated");
});

const plansDir = mkdtempSync(join(tmpdir(), "appstack-plans-"));
after(() => rmSync(plansDir, { recursive: true, force: true }));

test("plans are named by their content, only the newest is kept, and ids that are not digests find nothing", async () => {
  const store = new PlanStore(plansDir, new StateIo(60_000));
  const first = await store.draft("app.ns.web");
  writeFileSync(first, '{"plan":1}');
  const firstId = await store.commit("app.ns.web", first);
  assert.match(firstId, /^[0-9a-f]{12}$/);
  assert.ok(await store.find("app.ns.web", firstId));

  const second = await store.draft("app.ns.web");
  writeFileSync(second, '{"plan":2}');
  const secondId = await store.commit("app.ns.web", second);
  assert.notEqual(secondId, firstId);
  assert.equal(await store.find("app.ns.web", firstId), undefined);
  assert.deepEqual(readdirSync(join(plansDir, "app.ns.web")), [`${secondId}.json`]);

  assert.equal(await store.find("app.ns.web", "../../../etc/passwd"), undefined);
  assert.equal(await store.find("app.ns.web", secondId.toUpperCase()), undefined);
  await store.discard("app.ns.web");
  assert.equal(await store.find("app.ns.web", secondId), undefined);
});

test("a plan one replica previewed is found by another through the backend they share, and only the newest", async () => {
  const backend = mkdtempSync(join(tmpdir(), "appstack-plans-backend-"));
  after(() => rmSync(backend, { recursive: true, force: true }));
  const io = new StateIo(60_000);
  const shared = new FileStore(backend, io);
  const a = new PlanStore(mkdtempSync(join(plansDir, "a-")), io, shared);
  const b = new PlanStore(mkdtempSync(join(plansDir, "b-")), io, shared);
  const draft = await a.draft("app.ns.web");
  writeFileSync(draft, '{"plan":"a"}');
  const id = await a.commit("app.ns.web", draft);
  const found = await b.find("app.ns.web", id);
  assert.ok(found, "the other replica finds the plan");
  assert.equal(readFileSync(found, "utf8"), '{"plan":"a"}');
  assert.deepEqual(readdirSync(join(backend, ".appstack", "plans", "app.ns.web")), [`${id}.json`]);

  // B previews anew: A's copy of the old plan no longer counts.
  const newer = await b.draft("app.ns.web");
  writeFileSync(newer, '{"plan":"b"}');
  const newerId = await b.commit("app.ns.web", newer);
  assert.equal(await a.find("app.ns.web", id), undefined, "a replaced plan is refused, though a local copy remains");
  assert.ok(await a.find("app.ns.web", newerId));
  await a.discard("app.ns.web");
  assert.equal(await b.find("app.ns.web", newerId), undefined, "discarded for every replica");
});

