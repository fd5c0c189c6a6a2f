// Argo CD's health check (deploy/argocd/health.lua) against kstatus on every branch of kstatus's
// reading, with objects made here; the e2e files (preview, suspend, operator, wait-and-metrics) run
// it on objects read back from a cluster. Also: the script docs/monitoring.md shows is the file.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import yaml from "js-yaml";
import { repoRoot } from "../../toolchain/tools.ts";
import { argoHealth, expectedHealth, healthScriptPath } from "../helpers/argocd-health.ts";
import { kstatus } from "../helpers/kstatus.ts";

type Condition = { type: string; status: string; reason: string; message: string; observedGeneration: number };
const condition = (type: string, status: string, reason: string, observedGeneration = 2): Condition => ({ type, status, reason, message: `${type} ${status} ${reason}`, observedGeneration });
const kstatusConditions = (ready: boolean, reconciling: boolean, stalled: boolean, reason: string, observedGeneration = 2) => [
  condition("Ready", ready ? "True" : "False", reason, observedGeneration),
  condition("Reconciling", reconciling ? "True" : "False", reason, observedGeneration),
  condition("Stalled", stalled ? "True" : "False", reason, observedGeneration),
];

function app(status: object | undefined, metadata: object = {}): object {
  return { apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name: "web", namespace: "default", generation: 2, ...metadata }, spec: { image: "nginx" }, ...(status ? { status } : {}) };
}

const cases: [string, object][] = [
  ["applied and available", app({ observedGeneration: 2, conditions: kstatusConditions(true, false, false, "Available") })],
  ["rolling out", app({ observedGeneration: 2, conditions: kstatusConditions(false, true, false, "RollingOut") })],
  ["stalled", app({ observedGeneration: 2, conditions: kstatusConditions(false, false, true, "StackUpdateFailed") })],
  ["a new generation not applied, the old Ready=True standing", app({ observedGeneration: 1, conditions: kstatusConditions(true, false, false, "Available", 1) })],
  ["new: the schema's default observedGeneration 0", { ...app({ observedGeneration: 0 }), metadata: { name: "web", namespace: "default", generation: 1 } }],
  ["awaiting approval", app({ observedGeneration: 1, conditions: kstatusConditions(false, false, false, "AwaitingApproval") })],
  ["awaiting approval of a drift repair", app({ observedGeneration: 2, conditions: kstatusConditions(false, false, false, "AwaitingApproval") })],
  ["Ready Unknown", app({ observedGeneration: 2, conditions: [condition("Ready", "Unknown", "Unknown")] })],
  ["no conditions", app({ observedGeneration: 2 })],
  ["no status at all", app(undefined)],
  ["suspended, nothing held back", app({ observedGeneration: 2, conditions: kstatusConditions(true, false, false, "Suspended") })],
  ["suspended, a change held back", app({ observedGeneration: 1, conditions: kstatusConditions(false, false, false, "Suspended") })],
  ["resumed: the Suspended reason of the generation before", app({ observedGeneration: 1, conditions: kstatusConditions(true, false, false, "Suspended", 1) })],
  ["being deleted", app({ observedGeneration: 2, conditions: kstatusConditions(false, true, false, "Deleting") }, { deletionTimestamp: "2026-11-26T12:00:00Z", finalizers: ["appstack.dev/finalizer"] })],
  ["being deleted while suspended", app({ observedGeneration: 2, conditions: kstatusConditions(true, false, false, "Suspended") }, { deletionTimestamp: "2026-11-26T12:00:00Z", finalizers: ["appstack.dev/finalizer"] })],
  ["a destroy that failed", app({ observedGeneration: 2, conditions: kstatusConditions(false, false, true, "DestroyFailed") }, { deletionTimestamp: "2026-11-26T12:00:00Z", finalizers: ["appstack.dev/finalizer"] })],
];

test("the health check reads every state as kstatus does: Current Healthy, InProgress Progressing, Failed Degraded, Terminating Progressing; held by spec.suspend, Suspended", () => {
  const seen = new Set<string>();
  for (const [state, object] of cases) {
    const reading = kstatus(object);
    const health = argoHealth(object);
    assert.equal(health.status, expectedHealth(object as Parameters<typeof expectedHealth>[0], reading.status), `${state}: kstatus ${reading.status} (${reading.message}), Argo CD ${health.status} (${health.message})`);
    seen.add(`${reading.status}->${health.status}`);
  }
  assert.deepEqual([...seen].sort(), ["Current->Healthy", "Current->Suspended", "Failed->Degraded", "InProgress->Progressing", "InProgress->Suspended", "Terminating->Progressing"]);
});

test("the message says why: the condition's words, or the generation not applied yet", () => {
  assert.deepEqual(argoHealth(cases[2]![1]), { status: "Degraded", message: "Stalled True StackUpdateFailed" });
  assert.deepEqual(argoHealth(cases[3]![1]), { status: "Progressing", message: "generation 2 is not applied yet (observedGeneration 1): Ready True Available" });
});

test("docs/monitoring.md installs exactly deploy/argocd/health.lua, for both kinds, under argocd-cm's keys", () => {
  const page = readFileSync(join(repoRoot, "docs/monitoring.md"), "utf8");
  const block = /```yaml\n(apiVersion: v1\nkind: ConfigMap\n[\s\S]*?)```/.exec(page)?.[1];
  assert.ok(block, "a ConfigMap block in docs/monitoring.md");
  const configMap = yaml.load(block) as { metadata: { name: string; namespace: string }; data: Record<string, string> };
  assert.equal(configMap.metadata.name, "argocd-cm");
  const script = readFileSync(healthScriptPath, "utf8");
  assert.deepEqual(Object.keys(configMap.data).sort(), ["resource.customizations.health.appstack.dev_App", "resource.customizations.health.appstack.dev_Memcached"]);
  for (const value of Object.values(configMap.data)) assert.equal(value, script);
});
