// spec.dependsOn as pure decisions: what waits (a new spec, not a repair), when a dependency counts
// as Ready, how a wait and a cycle read (to kstatus too: InProgress while waiting, Stalled for a
// cycle), and which dependants the watcher's index queues on a dependency's change.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Condition, DependencyRef, Workload, WorkloadKind } from "../../crds/types.ts";
import type { App } from "../../components/app.ts";
import type { Memcached } from "../../components/memcached.ts";
import { conditionsFor } from "../../operator/controller/conditions.ts";
import { DependencyIndex, dependencyPhase, findCycle, holdsApply, notReady, type Lookup } from "../../operator/controller/dependencies.ts";
import { appliedNow, decide, programVersion, specDigest } from "../../operator/controller/drift.ts";
import { observedGeneration } from "../../operator/controller/status.ts";
import { kstatus } from "../helpers/kstatus.ts";

const namespace = "default";

function app(name: string, dependsOn?: DependencyRef[], generation = 1): App {
  return { apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name, namespace, uid: `uid-${name}`, generation }, spec: { image: "nginx:1.27", replicas: 1, ...(dependsOn ? { dependsOn } : {}) } };
}

function memcached(name: string, generation: number, ready?: { status: Condition["status"]; observed: number; reason?: string }): Memcached {
  const conditions: Condition[] = ready ? [{ type: "Ready", status: ready.status, reason: ready.reason ?? (ready.status === "True" ? "Available" : "RollingOut"), message: "", observedGeneration: ready.observed, lastTransitionTime: "2026-11-26T00:00:00Z" }] : [];
  return { apiVersion: "appstack.dev/v1alpha1", kind: "Memcached", metadata: { name, namespace, uid: `uid-${name}`, generation }, spec: { size: 1, image: "memcached:1.6" }, ...(ready ? { status: { observedGeneration: ready.observed, conditions } } : {}) };
}

const lookupOf = (...objects: Workload[]): Lookup => (kind: WorkloadKind, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);
const cache: DependencyRef = { kind: "Memcached", name: "cache" };

test("only a spec not applied yet waits: a first apply and a new generation, not a repair, a request's up, a program change or an unfinished operation", () => {
  assert.equal(holdsApply(decide({ program: programVersion, generation: 1, applied: undefined, drift: [], orphanedState: false })), true);
  const applied = { programVersion, generation: 1, spec: specDigest({ image: "nginx:1.27", replicas: 1 }) };
  assert.equal(holdsApply(decide({ program: programVersion, generation: 2, applied, drift: [], orphanedState: false })), true);
  assert.equal(holdsApply(decide({ program: programVersion, generation: 1, applied, drift: ["Deployment web: spec.replicas: 3, want 1"], orphanedState: false })), false);
  assert.equal(holdsApply(decide({ program: programVersion, generation: 1, applied: { ...applied, programVersion: "0" }, drift: [], orphanedState: false })), false);
  assert.equal(holdsApply({ action: "apply", reason: "reconcile requested", refresh: true, cause: "requested" }), false);
  assert.equal(holdsApply({ action: "apply", reason: "interrupted", refresh: true, cause: "interrupted" }), false);
  assert.equal(holdsApply({ action: "none" }), false);
});

test("a dependsOn change alone changes nothing applied: the new generation is applied as it is, with no Pulumi run", () => {
  const spec = { image: "nginx:1.27", replicas: 1 };
  assert.equal(specDigest({ ...spec, dependsOn: [cache] }), specDigest(spec));
  const applied = { programVersion, generation: 1, spec: specDigest(spec) };
  assert.equal(decide({ program: programVersion, generation: 2, applied: appliedNow(applied, 2, specDigest({ ...spec, dependsOn: [cache] }), programVersion), drift: [], orphanedState: false }).action, "none");
});

test("a dependency is Ready only with Ready=True and status.observedGeneration both at its current generation", () => {
  assert.equal(notReady(undefined), "it does not exist");
  assert.equal(notReady(memcached("cache", 3)), "not Ready for generation 3");
  assert.equal(notReady(memcached("cache", 3, { status: "True", observed: 2 })), "not Ready for generation 3", "Ready for the generation before");
  assert.equal(notReady(memcached("cache", 3, { status: "False", observed: 3, reason: "Suspended" })), "not Ready for generation 3 (Suspended)");
  assert.equal(notReady(memcached("cache", 3, { status: "True", observed: 3 })), undefined);
  const stale = memcached("cache", 3, { status: "True", observed: 3 });
  stale.status!.observedGeneration = 2;
  assert.equal(notReady(stale), "not Ready for generation 3");
  const deleting = memcached("cache", 3, { status: "True", observed: 3 });
  deleting.metadata.deletionTimestamp = new Date();
  assert.equal(notReady(deleting), "it is being deleted");
});

test("waiting names each dependency and why; it reads InProgress to kstatus (Reconciling, not Stalled) and leaves observedGeneration behind", () => {
  const web = app("web", [cache, { kind: "App", name: "api" }]);
  const phase = dependencyPhase(web, lookupOf(memcached("cache", 3, { status: "False", observed: 3, reason: "Suspended" })), "never applied");
  assert.deepEqual(phase, { kind: "progressing", reason: "DependencyNotReady", message: "waiting for Memcached/cache: not Ready for generation 3 (Suspended); App/api: it does not exist; held back: never applied" });
  const conditions = conditionsFor(phase, 1);
  assert.deepEqual(conditions.map((c) => [c.type, c.status, c.reason]), [["Ready", "False", "DependencyNotReady"], ["Reconciling", "True", "DependencyNotReady"], ["Stalled", "False", "DependencyNotReady"]]);
  const status = { observedGeneration: observedGeneration(1, phase, { name: "app.default.web" }), conditions };
  assert.equal(status.observedGeneration, 0);
  assert.equal(kstatus({ ...web, status }).status, "InProgress");
  // Every dependency Ready: nothing holds the apply.
  assert.equal(dependencyPhase(web, lookupOf(memcached("cache", 3, { status: "True", observed: 3 }), { ...app("api"), status: { observedGeneration: 1, conditions: conditionsFor({ kind: "ready", message: "1 of 1" }, 1) } }), "never applied"), undefined);
  assert.equal(dependencyPhase(app("alone"), lookupOf(), "never applied"), undefined);
});

test("a cycle through the object is Stalled, naming it; a cycle further down is waited on like any dependency not Ready", () => {
  const a = app("a", [{ kind: "App", name: "b" }]);
  const b = app("b", [{ kind: "Memcached", name: "c" }]);
  const c = { ...memcached("c", 1), spec: { size: 1, image: "memcached:1.6", dependsOn: [{ kind: "App", name: "a" }] } } as Memcached;
  const lookup = lookupOf(a, b, c);
  assert.deepEqual(findCycle(a, lookup), ["App/a", "App/b", "Memcached/c", "App/a"]);
  const phase = dependencyPhase(a, lookup, "never applied");
  assert.equal(phase?.kind, "stalled");
  assert.deepEqual(phase?.kind === "stalled" && [phase.reason, phase.message], ["DependencyCycle", "spec.dependsOn makes a cycle: App/a -> App/b -> Memcached/c -> App/a; nothing is applied until a dependsOn along it is removed"]);
  const status = { observedGeneration: observedGeneration(1, phase, { name: "app.default.a" }), conditions: conditionsFor(phase, 1) };
  assert.equal(kstatus({ ...a, status }).status, "Failed");
  // x waits on a, which is in a cycle x is not part of: x waits, and a reports the cycle.
  const x = app("x", [{ kind: "App", name: "a" }]);
  assert.equal(findCycle(x, lookup), undefined);
  assert.equal(dependencyPhase(x, lookup, "never applied")?.kind, "progressing");
  // A diamond is no cycle.
  const top = app("top", [{ kind: "App", name: "l" }, { kind: "App", name: "r" }]);
  assert.equal(findCycle(top, lookupOf(top, app("l", [{ kind: "App", name: "base" }]), app("r", [{ kind: "App", name: "base" }]), app("base"))), undefined);
  // An App and a Memcached of one name are two objects.
  assert.equal(findCycle(app("same", [{ kind: "Memcached", name: "same" }]), lookupOf(memcached("same", 1))), undefined);
});

test("the index queues the dependants of an object whose readiness, generation or dependsOn changed, and of one created or deleted; its status writes alone queue nothing", () => {
  const index = new DependencyIndex();
  const key = "Memcached/default/cache";
  // The dependant is seen before its dependency exists: the dependency's creation queues it.
  assert.deepEqual(index.seen("App/default/web", app("web", [cache])), []);
  assert.deepEqual(index.seen(key, memcached("cache", 1)), ["App/default/web"]);
  assert.deepEqual(index.seen(key, memcached("cache", 1)), [], "nothing changed");
  assert.deepEqual(index.seen(key, memcached("cache", 1, { status: "False", observed: 0, reason: "Creating" })), [], "still not Ready for generation 1");
  assert.deepEqual(index.seen(key, memcached("cache", 1, { status: "True", observed: 1 })), ["App/default/web"]);
  assert.deepEqual(index.seen(key, memcached("cache", 2, { status: "True", observed: 1 })), ["App/default/web"], "a new generation: not Ready for it");
  assert.deepEqual(index.gone(key), ["App/default/web"]);
  // The dependant no longer names it: nothing is queued for it.
  assert.deepEqual(index.seen("App/default/web", app("web", [], 2)), []);
  assert.deepEqual(index.seen(key, memcached("cache", 1)), []);
  assert.deepEqual(index.dependantsOf(key), []);
  // Two dependants, one deleted.
  index.seen("App/default/a", app("a", [cache]));
  index.seen("App/default/b", app("b", [cache]));
  index.gone("App/default/a");
  assert.deepEqual(index.seen(key, memcached("cache", 1, { status: "True", observed: 1 })), ["App/default/b"]);
});
