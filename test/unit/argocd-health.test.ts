// Argo CD's health check (deploy/argocd/health.lua) against kstatus on every branch of kstatus's
// reading, with objects made here; the e2e files (preview, suspend, operator, wait-and-metrics) run
// it on objects read back from a cluster. Also: docs/monitoring.md builds argocd-cm's keys from the
// file, and holds no copy of it.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
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

test("docs/monitoring.md builds argocd-cm's keys for both kinds from deploy/argocd/health.lua, and no page holds a copy of it", () => {
  const page = readFileSync(join(repoRoot, "docs/monitoring.md"), "utf8");
  const block = /```sh\n(kubectl -n argocd create configmap argocd-cm [\s\S]*?)```/.exec(page)?.[1];
  assert.ok(block, "a command in docs/monitoring.md that makes argocd-cm's keys");
  const sources = [...block.matchAll(/--from-file=(\S+)=(\S+)/g)].map((match) => [match[1], match[2]]);
  assert.deepEqual(sources, [
    ["resource.customizations.health.appstack.dev_App", "deploy/argocd/health.lua"],
    ["resource.customizations.health.appstack.dev_Memcached", "deploy/argocd/health.lua"],
  ]);
  assert.equal(join(repoRoot, "deploy/argocd/health.lua"), healthScriptPath);
  assert.match(block, /kubectl apply --server-side --field-manager=\S+ -f -/, "only the two keys applied, the rest of argocd-cm kept");
  // A copy would drift: no page holds the script's lines.
  const script = readFileSync(healthScriptPath, "utf8");
  const distinctive = script.split("\n").filter((line) => line.trim().length > 40 && !line.trim().startsWith("--"));
  assert.ok(distinctive.length > 10);
  for (const pageName of ["README.md", "docs/monitoring.md", "docs/api.md", "docs/operate.md"]) {
    const text = readFileSync(join(repoRoot, pageName), "utf8");
    assert.deepEqual(distinctive.filter((line) => text.includes(line.trim())), [], `${pageName} holds lines of the script`);
  }
});
