// The command line a person reaches for, as `kubectl appstack <command>` (the plugin on PATH, as
// the main job installs it) against one local cluster with the operator running: history, approve,
// status, and the bound on the state folder. Each output is checked against the API server (the
// object, its children, its annotations) and the stack state (the history files in the state folder).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { PatchStrategy, setHeaderOptions, type V1Deployment } from "@kubernetes/client-node";
import { approveAnnotation, type WorkloadKind } from "../../crds/types.ts";
import type { App } from "../../components/app.ts";
import type { HistoryRow } from "../../operator/cmd/history-cli.ts";
import { installPluginBin } from "../../operator/cmd/plugin-bin.ts";
import type { ObjectState } from "../../operator/cmd/status-cli.ts";
import { stackName } from "../../operator/pulumi/stack-names.ts";
import { toolPath } from "../../toolchain/tools.ts";
import { eventually, eventWithReason, isNotFound, orUndefined, useCluster } from "../helpers/cluster.ts";
import { denyWrites, holdWrites } from "../helpers/hold.ts";
import { appstackAs, approverRules, grantPerson, kubectlAs } from "../helpers/person.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { fieldManager } from "../../components/metadata.ts";
import { disposeOperator, stackHistoryEntries, stackHistoryFolder, startOperatorProcess, Workloads, type CliResult, type OperatorProcess } from "../helpers/operator.ts";

/** Updates kept per stack in this file: small, so that the churn below passes it. */
const historyLimit = 4;
const namespace = "default";
const scratch = mkdtempSync(join(tmpdir(), "appstack-cli-test-"));
after(() => rmSync(scratch, { recursive: true, force: true }));
const bin = installPluginBin(join(scratch, "bin"));

let operator: OperatorProcess | undefined;
let workloads: Workloads;
const cluster = useCluster(
  async ({ cluster: local }) => {
    operator = await startOperatorProcess(local.kubeconfig, { env: { APPSTACK_LEADER_ELECT: "false", APPSTACK_HISTORY_LIMIT: String(historyLimit) } });
    workloads = new Workloads(local.kubeconfig);
  },
  () => disposeOperator(operator),
);

const cliEnv = () => ({ ...process.env, PATH: `${bin}:${process.env["PATH"] ?? ""}`, KUBECONFIG: cluster().cluster.kubeconfig, APPSTACK_STATE_DIR: operator!.stateDir, APPSTACK_PASSPHRASE: "e2e-passphrase" });

/** `kubectl appstack <args>` with the plugin folder first on PATH; stdin is no terminal. */
function appstack(...args: string[]): Promise<CliResult> {
  return finished(spawn(toolPath("kubectl"), ["appstack", ...args], { env: cliEnv(), stdio: ["ignore", "pipe", "pipe"] }));
}

/** `kubectl appstack <args>` on a terminal (a pseudo-terminal of util-linux `script`), answering its question with `answer`. */
function appstackOnTerminal(answer: string, ...args: string[]): Promise<CliResult> {
  const child = spawn("script", ["-qec", ["kubectl", "appstack", ...args].join(" "), "/dev/null"], { env: cliEnv(), stdio: ["pipe", "pipe", "pipe"] });
  let asked = false;
  const result = finished(child);
  child.stdout.on("data", (chunk: Buffer) => {
    if (asked || !chunk.toString().includes("[y/N]")) return;
    asked = true;
    child.stdin.write(`${answer}\n`);
  });
  return result;
}

function finished(child: ReturnType<typeof spawn>): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const deadline = setTimeout(() => child.kill("SIGKILL"), 120_000);
  return new Promise((resolve) => child.once("close", (status) => {
    clearTimeout(deadline);
    resolve({ status, stdout, stderr });
  }));
}

/** `kubectl appstack history`: from the object's status, or with `--stack` from the stack's own history. */
async function history(kind: WorkloadKind, name: string, ...flags: string[]): Promise<HistoryRow[]> {
  const result = await appstack("history", `${kind.toLowerCase()}/${name}`, "-n", namespace, "-o", "json", ...flags);
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout) as HistoryRow[];
}

/** The stack's history folder in the operator's state: Pulumi's own record of its updates. */
function historyFolder(kind: WorkloadKind, name: string): string {
  return stackHistoryFolder(operator!.stateDir, kind, namespace, name);
}

function historyEntries(kind: WorkloadKind, name: string): string[] {
  return stackHistoryEntries(operator!.stateDir, kind, namespace, name);
}

function folderBytes(path: string): number {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, entry) => sum + folderBytes(join(path, entry)), 0);
}

/**
 * What a row says of its update, whichever history it comes from: not its time (the engine's clock
 * and the operator's differ), nor a failure's resource counts, which only Pulumi's history keeps.
 */
const sameUpdate = ({ time: _time, error: _error, changes, ...row }: HistoryRow) => ({ ...row, ...(row.result === "failed" ? {} : { changes }) });

async function deployment(name: string): Promise<V1Deployment | undefined> {
  return orUndefined(() => cluster().apps.readNamespacedDeployment({ name, namespace }));
}

test("history: one row per update, with the generation applied and why: created, spec changed, drift repaired", async () => {
  await workloads.create({ kind: "App", metadata: { name: "web", namespace }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } });
  await workloads.ready("App", namespace, "web");
  await workloads.scale("App", namespace, "web", 2);
  const scaled = await workloads.ready("App", namespace, "web");
  await cluster().apps.patchNamespacedDeployment({ name: "web", namespace, body: { spec: { replicas: 5 } } }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
  await eventWithReason(cluster().core, namespace, "web", "DriftRepaired");
  assert.equal((await deployment("web"))?.spec?.replicas, 2);

  const rows = await history("App", "web");
  assert.deepEqual(rows.map((r) => [r.operation, r.result, r.generation, r.why]), [
    ["update", "succeeded", 1, "created"],
    ["update", "succeeded", 2, "spec"],
    ["update", "succeeded", 2, "drift"],
  ]);
  assert.equal(scaled.metadata.generation, 2, "the generation the API server gave the scaled spec is the one applied");
  assert.ok((rows[0]!.changes["create"] ?? 0) >= 2, `the Deployment and Service created: ${JSON.stringify(rows[0]!.changes)}`);
  assert.equal(rows[1]!.changes["update"], 1);
  assert.match(rows[1]!.reason, /spec changed \(generation 1 -> 2\)/);
  assert.deepEqual(rows[2]!.fields, ["Deployment web: spec.replicas"]);
  assert.ok(rows.every((row, i) => i === 0 || row.time >= rows[i - 1]!.time), "oldest first");
  // Each row is one of Pulumi's own history entries in the state folder, and says what the stack's history says.
  assert.equal(historyEntries("App", "web").length, rows.length);
  assert.deepEqual(rows.map(sameUpdate), (await history("App", "web", "--stack")).map(sameUpdate));

  const table = await appstack("history", "app/web");
  assert.equal(table.status, 0, table.stderr);
  assert.match(table.stdout, /^TIME\s+OPERATION\s+GENERATION\s+WHY\s+CHANGES\n/);
  assert.match(table.stdout, /update succeeded\s+2\s+drift repaired \(Deployment web: spec.replicas\)/);
});

test("history: a failed update and its retry, each a row; the oldest row pruned past the bound", async () => {
  // The engine's first write of the new spec is refused: the update fails, and is retried.
  const denial = await denyWrites(cluster().cluster, "deployments", "UPDATE", namespace, "web", { when: (request) => request.options?.fieldManager === fieldManager, times: 1 });
  try {
    await workloads.scale("App", namespace, "web", 3);
    await denial.denied;
    await workloads.ready("App", namespace, "web");
  } finally {
    await denial.remove();
  }
  assert.equal((await deployment("web"))?.spec?.replicas, 3);
  const rows = await history("App", "web", "--stack");
  assert.deepEqual(rows.map((r) => [r.operation, r.result, r.generation, r.why, r.attempt]), [
    ["update", "succeeded", 2, "spec", undefined],
    ["update", "succeeded", 2, "drift", undefined],
    ["update", "failed", 3, "spec", undefined],
    ["update", "succeeded", 3, "spec", 2],
  ], `the last ${historyLimit} updates`);
  assert.equal(rows[3]!.reason, "retry 2: spec changed (generation 2 -> 3)");
  assert.equal(historyEntries("App", "web").length, historyLimit);
  // The status keeps its own ten: the created one too, and the failure's message.
  const fromStatus = await history("App", "web");
  assert.deepEqual(fromStatus.slice(1).map(sameUpdate), rows.map(sameUpdate));
  assert.deepEqual([fromStatus[0]!.why, fromStatus.length], ["created", historyLimit + 1]);
  assert.match(fromStatus[3]!.error ?? "", /denied by the test/i);
});

test("approve: refused without a terminal, declined and confirmed on one (exactly the waiting plan), refused when no plan waits", async () => {
  await workloads.create({ kind: "App", metadata: { name: "gated", namespace }, spec: { image: "nginx:1.27", replicas: 1, updatePolicy: "Preview" } });
  const { preview } = await workloads.previewOf("App", namespace, "gated");

  const unasked = await appstack("approve", "app/gated");
  assert.equal(unasked.status, 1);
  assert.match(unasked.stdout, new RegExp(`plan ${preview.planId} waits for approval`));
  assert.match(unasked.stderr, /no terminal to ask on; pass --yes/);
  assert.equal((await workloads.get("App", namespace, "gated")).metadata.annotations?.[approveAnnotation], undefined, "nothing approved");

  // On a terminal it asks: "n" approves nothing, "y" approves the plan shown.
  const declined = await appstackOnTerminal("n", "approve", "app/gated");
  assert.equal(declined.status, 1, declined.stdout);
  assert.match(declined.stdout, new RegExp(`approve plan ${preview.planId}\\? \\[y/N\\][^\\n]*\\n+appstack approve: not approved\\r?\\n$`));
  assert.equal((await workloads.get("App", namespace, "gated")).metadata.annotations?.[approveAnnotation], undefined, "nothing approved");
  const approved = await appstackOnTerminal("y", "approve", "app/gated");
  assert.equal(approved.status, 0, approved.stdout);
  assert.match(approved.stdout, /create\s+kubernetes:apps\/v1:Deployment gated/);
  assert.match(approved.stdout, new RegExp(`approved plan ${preview.planId}`));
  await workloads.ready("App", namespace, "gated");
  await eventWithReason(cluster().core, namespace, "gated", "PlanApplied", (m) => m.includes(preview.planId));
  assert.equal((await deployment("gated"))?.spec?.replicas, 1);

  const rows = await history("App", "gated");
  assert.deepEqual(rows.map((r) => [r.operation, r.generation, r.why, r.plan]), [["update", 1, "approved", preview.planId]]);

  const nothing = await appstack("approve", "app/gated", "--yes");
  assert.equal(nothing.status, 1);
  assert.match(nothing.stderr, /app\/gated in namespace default: no plan is waiting for approval/);
  const missing = await appstack("approve", "app/absent", "--yes");
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /does not exist/);
});

test("approve: a plan that changed between showing and approving is refused, and the new one waits unapproved", async () => {
  await workloads.mergeSpec("App", namespace, "gated", { replicas: 2 });
  const { preview: shown } = await workloads.previewOf("App", namespace, "gated");
  // The approval's write is held at admission while the spec changes and a new plan is previewed.
  const hold = await holdWrites(cluster().cluster, "apps", "UPDATE", namespace, "gated", /^appstack-approve$/);
  let released = false;
  try {
    const approving = appstack("approve", "app/gated", "--yes");
    await hold.held;
    await workloads.mergeSpec("App", namespace, "gated", { replicas: 3 });
    const { preview: fresh } = await workloads.previewOf("App", namespace, "gated", shown.planId);
    await hold.release();
    released = true;
    const result = await approving;
    assert.equal(result.status, 1, result.stderr);
    assert.match(result.stderr, new RegExp(`plan ${shown.planId} is replaced by plan ${fresh.planId}`));
    const object = (await workloads.get("App", namespace, "gated")) as App;
    assert.equal(object.metadata.annotations?.[approveAnnotation], undefined, "nothing approved");
    assert.equal(object.status?.preview?.planId, fresh.planId);
    assert.equal((await deployment("gated"))?.spec?.replicas, 1, "the cluster is untouched");
  } finally {
    if (!released) await hold.release();
  }
});

/** The Deployment of another party that the App clash runs into. */
let theirClash: V1Deployment | undefined;

test("status: every object in scope with ready, drifted, awaiting approval and stalled; exit 3 while one needs a person", async () => {
  // A Deployment someone else made, of the name the App's would have: a conflict, stalled.
  const labels = { app: "clash" };
  const theirs = await cluster().apps.createNamespacedDeployment({ namespace, body: { metadata: { name: "clash" }, spec: { selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: "c", image: "nginx" }] } } } } });
  await workloads.create({ kind: "App", metadata: { name: "clash", namespace }, spec: { image: "nginx:1.27", replicas: 1 } });
  await workloads.create({ kind: "Memcached", metadata: { name: "cache", namespace }, spec: { size: 1 } });
  // Drift under updatePolicy Preview waits for approval, naming what differs.
  await workloads.create({ kind: "App", metadata: { name: "drifty", namespace }, spec: { image: "nginx:1.27", replicas: 1, updatePolicy: "Preview" } });
  await workloads.readyApproving("App", namespace, "drifty");
  await cluster().apps.patchNamespacedDeployment({ name: "drifty", namespace, body: { spec: { replicas: 4 } } }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
  const { preview: drift } = await workloads.previewOf("App", namespace, "drifty", (await workloads.get("App", namespace, "drifty")).status?.preview?.planId);
  assert.equal(drift.reason, "drift: Deployment drifty: spec.replicas: 4, want 1");
  await workloads.condition("App", namespace, "clash", "Stalled", "True");
  await workloads.ready("Memcached", namespace, "cache");
  const gated = (await workloads.get("App", namespace, "gated")) as App;
  const waiting = gated.status?.preview;
  assert.ok(waiting, "the plan of the previous test waits");

  const json = await appstack("status", "-A", "-o", "json");
  assert.equal(json.status, 3, json.stderr);
  const states = new Map((JSON.parse(json.stdout) as ObjectState[]).map((s) => [`${s.kind}/${s.name}`, s]));
  assert.deepEqual([...states.keys()].sort(), ["App/clash", "App/drifty", "App/gated", "App/web", "Memcached/cache"]);
  assert.deepEqual(states.get("App/drifty")?.drifted, ["Deployment drifty: spec.replicas"]);
  assert.equal(states.get("App/drifty")?.awaitingApproval?.plan, drift.planId);
  assert.deepEqual([states.get("App/web")?.ready, states.get("App/web")?.needsPerson], [true, false]);
  assert.deepEqual([states.get("Memcached/cache")?.ready, states.get("Memcached/cache")?.needsPerson], [true, false]);
  assert.deepEqual(states.get("App/gated")?.awaitingApproval, { plan: waiting.planId, since: waiting.time, reason: waiting.reason });
  assert.equal(states.get("App/clash")?.stalled?.reason, "ResourceConflict");
  assert.equal(states.get("App/clash")?.needsPerson, true);

  const table = await appstack("status", "-n", namespace);
  assert.equal(table.status, 3);
  assert.match(table.stdout, new RegExp(`app/gated\\s+False \\(AwaitingApproval\\)\\s+-\\s+plan ${waiting.planId} \\(\\d+[sm]\\)`));
  assert.match(table.stdout, /app\/clash\s+False \(ResourceConflict\)\s+-\s+-\s+ResourceConflict: /);
  assert.match(table.stdout, /memcached\/cache\s+True\s/);
  assert.match(table.stdout, new RegExp(`app/drifty\\s+False \\(AwaitingApproval\\)\\s+Deployment drifty: spec.replicas\\s+plan ${drift.planId}`));
  const elsewhere = await appstack("status", "-n", "kube-system");
  assert.deepEqual([elsewhere.status, elsewhere.stderr.trim()], [0, "no App or Memcached in namespace kube-system"]);

  theirClash = theirs;
});

test("status: exit 0 once nothing needs a person (the plan approved, the conflicting App removed)", async () => {
  assert.equal((await appstack("approve", "app/gated", "--yes")).status, 0);
  assert.equal((await appstack("approve", "app/drifty", "--yes")).status, 0);
  await workloads.delete("App", namespace, "clash");
  await workloads.gone("App", namespace, "clash");
  await workloads.ready("App", namespace, "gated");
  assert.equal((await deployment("gated"))?.spec?.replicas, 3);
  await workloads.ready("App", namespace, "drifty");
  await eventWithReason(cluster().core, namespace, "drifty", "PlanApplied");
  assert.equal((await deployment("drifty"))?.spec?.replicas, 1);
  // An approved drift repair: a refresh, then the update of the approved plan, both saying why.
  const repaired = (await history("App", "drifty", "--stack")).slice(1);
  assert.deepEqual(repaired.map((r) => [r.operation, r.why, r.fields]), [["refresh", "approved", ["Deployment drifty: spec.replicas"]], ["update", "approved", ["Deployment drifty: spec.replicas"]]]);
  const settled = await appstack("status", "-o", "yaml");
  assert.equal(settled.status, 0, settled.stdout);
  assert.match(settled.stdout, /name: gated\n\s+ready: true/);
  const after = await deployment("clash");
  assert.deepEqual([after?.metadata?.uid, after?.metadata?.generation], [theirClash?.metadata?.uid, theirClash?.metadata?.generation], "the other party's Deployment is untouched");
});

test("a person with only a kubeconfig and a Role in one namespace (get, list, patch): history and status there, not approve (the verb approve), which an approver does; refused in another namespace", async () => {
  const { cluster: local } = cluster();
  const kc = loadKubeConfig(local.kubeconfig);
  await grantPerson(kc, "alice", namespace);
  await cluster().core.createNamespace({ body: { metadata: { name: "team-b" } } });
  await workloads.create({ kind: "App", metadata: { name: "team-b-web", namespace: "team-b" }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } });
  await workloads.ready("App", "team-b", "team-b-web");
  const as = (...args: string[]) => appstackAs(local.kubeconfig, bin, "alice", ...args);

  const rows = await as("history", "app/web", "-n", namespace, "-o", "json");
  assert.equal(rows.status, 0, rows.stderr);
  assert.deepEqual((JSON.parse(rows.stdout) as HistoryRow[]).map(sameUpdate), (await history("App", "web")).map(sameUpdate));
  const status = await as("status", "-n", namespace, "-o", "json");
  assert.ok(status.status === 0 || status.status === 3, status.stderr);
  assert.ok((JSON.parse(status.stdout) as ObjectState[]).some((state) => state.name === "web"));

  await workloads.create({ kind: "App", metadata: { name: "alices", namespace }, spec: { image: "nginx:1.27", replicas: 1, port: 80, updatePolicy: "Preview" } });
  const { preview } = await workloads.previewOf("App", namespace, "alices");
  // patch writes the annotation, but approving is a verb of its own (crds/approval.ts): the API
  // server refuses alice's approval, kubectl's and the command's, naming the rule that grants it.
  const grants = /needs the RBAC verb approve on apps\.appstack\.dev: a Role rule \{apiGroups: \[appstack\.dev\], resources: \[apps\], verbs: \[approve\]\}/;
  const annotated = await kubectlAs(local.kubeconfig, "alice", ["annotate", "app", "alices", `${approveAnnotation}=${preview.planId}`, "-n", namespace]);
  assert.notEqual(annotated.status, 0, annotated.stdout);
  assert.match(annotated.stderr, /ValidatingAdmissionPolicy 'appstack\.dev-approve' .*denied request: alice may not approve/);
  assert.match(annotated.stderr, grants);
  const refusedApproval = await as("approve", "app/alices", "-n", namespace, "--yes");
  assert.equal(refusedApproval.status, 1, refusedApproval.stderr);
  assert.match(refusedApproval.stderr, /^appstack approve: not approved: HTTP 403: .*alice may not approve/);
  assert.match(refusedApproval.stderr, grants);
  // Her other edits go through; the plan still waits, unapproved, and nothing is applied.
  assert.equal((await kubectlAs(local.kubeconfig, "alice", ["label", "app", "alices", "reviewer=bob", "-n", namespace])).status, 0);
  const unapproved = (await workloads.get("App", namespace, "alices")) as App;
  assert.deepEqual([unapproved.metadata.labels?.["reviewer"], unapproved.metadata.annotations?.[approveAnnotation], unapproved.status?.preview?.planId], ["bob", undefined, preview.planId]);
  assert.equal(unapproved.status?.conditions?.find((c) => c.type === "Ready")?.reason, "AwaitingApproval");
  assert.equal(await deployment("alices"), undefined);
  // Carol may only read: RBAC refuses her the patch, and the command names both verbs.
  await grantPerson(kc, "carol", namespace, [{ apiGroups: ["appstack.dev"], resources: ["apps"], verbs: ["get", "list"] }]);
  const readOnly = await appstackAs(local.kubeconfig, bin, "carol", "approve", "app/alices", "-n", namespace, "--yes");
  assert.equal(readOnly.status, 1, readOnly.stderr);
  assert.match(readOnly.stderr, /User "carol" cannot patch resource "apps".*; approving needs the RBAC verbs patch and approve on apps\.appstack\.dev: a Role rule \{apiGroups: \[appstack\.dev\], resources: \[apps\], verbs: \[patch, approve\]\}/);
  // Bob, whose Role adds approve, approves her plan: the author and the approver are two people.
  await grantPerson(kc, "bob", namespace, approverRules);
  const approved = await appstackAs(local.kubeconfig, bin, "bob", "approve", "app/alices", "-n", namespace, "--yes");
  assert.equal(approved.status, 0, approved.stderr);
  await workloads.ready("App", namespace, "alices");
  assert.deepEqual((await history("App", "alices")).map((r) => [r.why, r.plan]), [["approved", preview.planId]]);

  // Another team's namespace: the API server's refusal, in its words.
  for (const args of [["history", "app/team-b-web"], ["status"], ["approve", "app/team-b-web", "--yes"]]) {
    const refused = await as(...args, "-n", "team-b");
    assert.equal(refused.status, 1, `${args.join(" ")}: ${refused.stdout}`);
    assert.match(refused.stderr, /HTTP 403: .*User "alice" cannot (get|list) resource "(apps|memcacheds)" in API group "appstack.dev" in the namespace "team-b"/, args.join(" "));
  }
  await workloads.delete("App", "team-b", "team-b-web");
  await workloads.delete("App", namespace, "alices");
  await workloads.gone("App", "team-b", "team-b-web");
  await workloads.gone("App", namespace, "alices");
});

test("history of a deleted object: its rows, the destroy the last, kept aside; nothing else of its stack left in the state folder", async () => {
  await workloads.delete("App", namespace, "web");
  await workloads.gone("App", namespace, "web");
  await eventually("the Deployment web to be gone", async () => ((await deployment("web")) === undefined ? true : undefined));
  await assert.rejects(cluster().core.readNamespacedService({ name: "web", namespace }), (error) => isNotFound(error));
  // Gone from the API server, its status too: the kept rows are in the operator's state.
  const gone = await appstack("history", "app/web");
  assert.equal(gone.status, 1);
  assert.match(gone.stderr, /app\/web not found in namespace default; a deleted object's kept history is in the operator's state: --stack/);
  const result = await appstack("history", "app/web", "--stack", "-o", "json");
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stderr, /app\/web in namespace default was deleted at \S+: its stack is removed; these rows were kept from its history/);
  const rows = JSON.parse(result.stdout) as HistoryRow[];
  // The last updates within the bound, as the stack had them when it was destroyed.
  assert.deepEqual(rows.map((r) => [r.operation, r.result, r.why]), [
    ["update", "succeeded", "drift"],
    ["update", "failed", "spec"],
    ["update", "succeeded", "spec"],
    ["destroy", "succeeded", "deleted"],
  ]);
  assert.ok((rows[3]!.changes["delete"] ?? 0) >= 2, JSON.stringify(rows[3]!.changes));

  const pulumiDir = join(operator!.stateDir, "backend", ".pulumi");
  const stack = stackName("App", namespace, "web");
  const left = ["stacks/appstack", "history/appstack", "backups/appstack"].flatMap((dir) => (existsSync(join(pulumiDir, dir)) ? readdirSync(join(pulumiDir, dir)) : []).filter((f) => f.startsWith(`${stack}.json`) || f === stack));
  assert.deepEqual(left, []);
  const kept = readdirSync(join(operator!.stateDir, "backend", "deleted-history")).filter((folder) => folder.endsWith(`-${stack}`));
  assert.equal(kept.length, 1);
  assert.deepEqual(readdirSync(join(operator!.stateDir, "backend", "deleted-history", kept[0]!)).map((f) => f.replace(/-\d+\./, "-N.")), Array(4).fill(`${stack}-N.history.json`), "the history entries only, no checkpoint copies");
});

test("bounded state: a churn of updates keeps the last N per stack, and no backups", async (t) => {
  await workloads.create({ kind: "App", metadata: { name: "churn", namespace }, spec: { image: "nginx:1.27", replicas: 1 } });
  await workloads.ready("App", namespace, "churn");
  const stackFile = join(operator!.stateDir, "backend", ".pulumi", "stacks", "appstack", `${stackName("App", namespace, "churn")}.json`);
  const sizes: number[] = [folderBytes(historyFolder("App", "churn"))];
  const updates = 6;
  for (let replicas = 2; replicas <= updates; replicas++) {
    await workloads.scale("App", namespace, "churn", replicas);
    await workloads.ready("App", namespace, "churn");
    sizes.push(folderBytes(historyFolder("App", "churn")));
    assert.ok(historyEntries("App", "churn").length <= historyLimit, `after update ${replicas}: ${historyEntries("App", "churn").length} entries`);
  }
  assert.equal(historyEntries("App", "churn").length, historyLimit);
  assert.equal(existsSync(join(operator!.stateDir, "backend", ".pulumi", "backups")), false, "no backup copies");
  const rows = await history("App", "churn", "--stack");
  assert.deepEqual(rows.map((r) => r.generation), [3, 4, 5, 6], "the stack's last updates, oldest first");
  // The status's own bound (10) is its own: all six there.
  assert.deepEqual((await history("App", "churn")).map((r) => r.generation), [1, 2, 3, 4, 5, 6]);
  const perUpdate = Math.round(sizes[1]! - sizes[0]!);
  t.diagnostic(`checkpoint ${statSync(stackFile).size} B; history per update ${perUpdate} B; history folder after ${updates} updates ${sizes.at(-1)} B (bound ${historyLimit}); sizes ${sizes.join(", ")}`);
  assert.ok(sizes.at(-1)! <= sizes[historyLimit - 1]! * 1.1, `the history folder stops growing at ${historyLimit} updates: ${sizes.join(", ")}`);
});
