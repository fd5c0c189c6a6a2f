// The command line's parsers and formatters (history, status, approve, kubectl's flags) and the
// record each update carries, without a cluster; test/e2e/command-line.test.ts drives the commands.
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, writeFileSync, mkdirSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
import type { UpdateSummary } from "@pulumi/pulumi/automation/index.js";
import { historyMessageLimit, statusHistoryLimit, type PreviewStatus, type StackOperation } from "../../crds/types.ts";
import type { App } from "../../components/app.ts";
import { updateRecord } from "../../operator/controller/update.ts";
import { describeChangeCounts, historyRows, historyTable, statusRows, summaryOf } from "../../operator/cmd/history-cli.ts";
import { withOperation } from "../../operator/controller/status.ts";
import { describePlan } from "../../operator/cmd/approve-cli.ts";
import { kubeConfigOf, namespaceOf, outputFormat, parseObjectRef } from "../../operator/cmd/kube-flags.ts";
import { objectState, statusTable } from "../../operator/cmd/status-cli.ts";
import { parseTimeout, reconcileOutcome } from "../../operator/cmd/reconcile-cli.ts";
import { UsageError } from "../../operator/cmd/flags.ts";
import { HistoryRetention, updatesIn } from "../../operator/pulumi/history-retention.ts";
import { DeletedHistory } from "../../operator/pulumi/deleted-history.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";
import { stateStore } from "../../operator/pulumi/state-store.ts";
import { createLogger } from "../../operator/base/log.ts";
import { driftField, parseUpdateMessage, updateMessage } from "../../operator/pulumi/update-messages.ts";

test("an update's message reads as words and parses back to its record; other messages parse to nothing", () => {
  const record = { generation: 3, why: "drift", fields: ["Deployment web: spec.replicas"], attempt: 2 } as const;
  const message = updateMessage(record);
  assert.match(message, /^generation 3: retry 2: drift repaired \(Deployment web: spec.replicas\) \[appstack \{/);
  assert.deepEqual(parseUpdateMessage(message), record);
  assert.equal(parseUpdateMessage("pulumi up by hand"), undefined);
  assert.equal(parseUpdateMessage(""), undefined);
  assert.equal(parseUpdateMessage('x [appstack {"generation":"3","why":"drift"}]'), undefined);
  assert.equal(parseUpdateMessage('x [appstack {"generation":3,"why":"bogus"}]'), undefined);
  assert.equal(driftField("Deployment web: spec.replicas: 5, want 2"), "Deployment web: spec.replicas");
  assert.equal(driftField("Service web: missing"), "Service web: missing");
});

const app = (over: Partial<App["metadata"]> = {}, status: App["status"] = {}): App => ({
  apiVersion: "appstack.dev/v1alpha1",
  kind: "App",
  metadata: { name: "web", namespace: "default", uid: "u", generation: 4, ...over },
  spec: { image: "nginx", replicas: 1 },
  status,
});

test("the record of an up: the spec's cause, a drift repair's fields, an approved plan, a retry", () => {
  const spec = { action: "apply", reason: "spec changed (generation 3 -> 4)", refresh: false, cause: "spec" } as const;
  assert.deepEqual(updateRecord(app(), spec, [], { name: "s" }, undefined), { generation: 4, why: "spec", detail: spec.reason });
  const repair = { action: "repair", reason: "drift: Deployment web: spec.replicas: 5, want 1" } as const;
  assert.deepEqual(updateRecord(app(), repair, ["Deployment web: spec.replicas: 5, want 1"], { name: "s", attempts: 1 }, undefined), {
    generation: 4, why: "drift", detail: repair.reason, fields: ["Deployment web: spec.replicas"], attempt: 2,
  });
  const waiting = app({}, { preview: { planId: "0123456789ab", reason: "spec changed (generation 3 -> 4)" } as PreviewStatus });
  assert.deepEqual(updateRecord(waiting, spec, [], { name: "s" }, { planId: "0123456789ab", planFile: "/p" }), {
    generation: 4, why: "approved", plan: "0123456789ab", detail: "spec changed (generation 3 -> 4)",
  });
});

const summary = (over: Partial<UpdateSummary>): UpdateSummary => ({ kind: "update", startTime: new Date("2026-01-01T10:00:00.123Z"), message: "", environment: {}, config: {}, result: "succeeded", ...over }) as UpdateSummary;

test("history rows: oldest first, the record's generation and why, other updates by their own message", () => {
  const rows = historyRows([
    summary({ message: updateMessage({ generation: 2, why: "approved", plan: "abcdefabcdef", detail: "spec changed (generation 1 -> 2)" }), resourceChanges: { update: 1, same: 2 }, startTime: new Date("2026-01-01T10:05:00Z") }),
    summary({ message: "a person's pulumi up", kind: "refresh", result: "failed" }),
    summary({ message: updateMessage({ generation: 1, why: "created" }), resourceChanges: { create: 3 } }),
  ]);
  assert.deepEqual(rows.map((r) => [r.operation, r.result, r.generation, r.why, r.reason]), [
    ["update", "succeeded", 1, "created", "created"],
    ["refresh", "failed", undefined, undefined, "a person's pulumi up"],
    ["update", "succeeded", 2, "approved", "plan abcdefabcdef approved (spec changed (generation 1 -> 2))"],
  ]);
  assert.equal(rows[2]?.plan, "abcdefabcdef");
  assert.equal(describeChangeCounts({ same: 2, update: 1, delete: 0 }), "update 1, same 2");
  assert.equal(describeChangeCounts({}), "none");
  const lines = historyTable(rows).split("\n");
  assert.match(lines[0]!, /^TIME\s+OPERATION\s+GENERATION\s+WHY\s+CHANGES$/);
  assert.match(lines[1]!, /2026-01-01T10:00:00Z\s+update succeeded\s+1\s+created\s+create 3$/);
  assert.match(lines[2]!, /refresh failed\s+-\s+a person's pulumi up\s+none$/);
});

test("status.history: each up, refresh and destroy once, no preview, the newest ten, a failure's message cut; its rows are the stack history's rows", () => {
  const operation = (minute: number, over: Partial<StackOperation> = {}): StackOperation => ({ kind: "up", result: "succeeded", startTime: `2026-01-01T10:${String(minute).padStart(2, "0")}:00Z`, endTime: `2026-01-01T10:${String(minute).padStart(2, "0")}:30Z`, ...over });
  let history = withOperation(undefined, operation(0, { update: { generation: 1, why: "created" }, resourceChanges: { create: 3 } }));
  // The same operation again (every status write carries the last one): kept once.
  history = withOperation(history, operation(0, { update: { generation: 1, why: "created" }, resourceChanges: { create: 3 } }));
  history = withOperation(history, operation(1, { kind: "preview" }));
  assert.equal(history?.length, 1);
  history = withOperation(history, operation(2, { result: "failed", message: "x".repeat(1000), update: { generation: 2, why: "spec", detail: "spec changed (generation 1 -> 2)" } }));
  const cut = history![1]!.message!;
  assert.equal(cut.length, historyMessageLimit);
  assert.ok(cut.endsWith("…"));
  for (let minute = 3; minute < 15; minute++) history = withOperation(history, operation(minute, { update: { generation: 2, why: "drift", fields: ["Deployment web: spec.replicas"] } }));
  assert.deepEqual([history!.length, history![0]!.startTime, history!.at(-1)!.startTime], [statusHistoryLimit, "2026-01-01T10:05:00Z", "2026-01-01T10:14:00Z"], "the newest ten, newest last");

  // A row from the status is the row the stack's history gives for the same update.
  const approved = { generation: 2, why: "approved", plan: "abcdefabcdef", detail: "spec changed (generation 1 -> 2)", attempt: 2 } as const;
  const [fromStatus] = statusRows([operation(20, { update: approved, resourceChanges: { update: 1, same: 2 } })]);
  const [fromStack] = historyRows([summary({ message: updateMessage(approved), resourceChanges: { update: 1, same: 2 }, startTime: new Date("2026-01-01T10:20:00Z") })]);
  assert.deepEqual(fromStatus, fromStack);
  const [failed] = statusRows([operation(21, { result: "failed", message: "the API server refused it", update: { generation: 3, why: "spec" } })]);
  assert.deepEqual([failed!.operation, failed!.result, failed!.generation, failed!.error], ["update", "failed", 3, "the API server refused it"]);
});

test("status: ready, drifted fields, the waiting plan and its age, stalled; who needs a person", () => {
  const now = new Date("2026-01-01T12:00:00Z");
  const cond = (type: "Ready" | "Reconciling" | "Stalled", status: "True" | "False", reason: string, message = "") => ({ type, status, reason, message, observedGeneration: 4, lastTransitionTime: now.toISOString() });
  const ready = objectState(app({}, { conditions: [cond("Ready", "True", "Available")] }));
  assert.deepEqual([ready.ready, ready.drifted, ready.needsPerson], [true, [], false]);
  const preview = { planId: "0123456789ab", generation: 4, basis: "b", reason: "drift: Deployment web: spec.replicas: 5, want 1; Service web: missing", time: "2026-01-01T11:57:00Z", changes: { update: 1 }, steps: [] };
  const waiting = objectState(app({ name: "gated" }, { conditions: [cond("Ready", "False", "AwaitingApproval")], preview }));
  assert.deepEqual(waiting.drifted, ["Deployment web: spec.replicas", "Service web: missing"]);
  assert.equal(waiting.awaitingApproval?.plan, "0123456789ab");
  assert.equal(waiting.needsPerson, true);
  const repairing = objectState(app({ name: "fixing" }, { conditions: [cond("Ready", "False", "RepairingDrift"), cond("Reconciling", "True", "RepairingDrift", "pulumi up: drift: Deployment fixing: spec.replicas: 2, want 1")] }));
  assert.deepEqual([repairing.drifted, repairing.needsPerson], [["Deployment fixing: spec.replicas"], false]);
  const detected = objectState(app({ name: "moved" }, { conditions: [cond("Ready", "False", "DriftDetected"), cond("Reconciling", "True", "DriftDetected", "the children changed while or after they were applied: Deployment moved: spec.replicas: 3, want 1; Service moved: missing; and 2 more")] }));
  assert.deepEqual(detected.drifted, ["Deployment moved: spec.replicas", "Service moved: missing"]);
  const stalled = objectState(app({ name: "stuck" }, { conditions: [cond("Ready", "False", "ResourceConflict", "x"), cond("Stalled", "True", "ResourceConflict", "Deployment stuck is not ours")] }));
  assert.deepEqual([stalled.stalled, stalled.needsPerson], [{ reason: "ResourceConflict", message: "Deployment stuck is not ours" }, true]);
  const old = objectState(app({ generation: 5 }, { conditions: [cond("Ready", "True", "Available")] }));
  assert.equal(old.ready, false, "Ready for an older generation is not ready");
  const pulling = objectState(app({ name: "pulling" }, { podsNotStarting: 2, conditions: [cond("Ready", "False", "ImagePullBackOff", "2 of 2 pods cannot start"), cond("Stalled", "True", "ImagePullBackOff", "2 of 2 pods cannot start")] }));
  assert.deepEqual([pulling.podsNotStarting, pulling.needsPerson, ready.podsNotStarting], [2, true, 0]);
  assert.match(statusTable([pulling], false, now).split("\n")[1]!, /^app\/pulling\s+False \(ImagePullBackOff, 2 pods not starting\)\s+-\s+-\s+ImagePullBackOff: 2 of 2 pods cannot start$/);
  // Suspended: Ready while the current spec is live; what is held back otherwise, drift named; no person needed for that alone.
  const suspendedApp = (status: App["status"]) => ({ ...app({ name: "paused" }, status), spec: { image: "nginx", replicas: 1, suspend: true } });
  const resting = objectState(suspendedApp({ conditions: [cond("Ready", "True", "Suspended", "1 of 1 replicas available; suspended (spec.suspend): nothing is applied or repaired until it is resumed")] }));
  assert.deepEqual([resting.ready, resting.suspended, resting.needsPerson], [true, true, false]);
  assert.match(statusTable([resting], false, now).split("\n")[1]!, /^app\/paused\s+True \(Suspended\)\s+-/);
  const holding = objectState(suspendedApp({ conditions: [cond("Ready", "False", "Suspended", "suspended (spec.suspend): nothing is applied or repaired until it is resumed; held back: drift: Deployment paused: spec.replicas: 5, want 1")] }));
  assert.deepEqual([holding.ready, holding.reason, holding.drifted, holding.needsPerson], [false, "Suspended", ["Deployment paused: spec.replicas"], false]);
  const lines = statusTable([ready, waiting, stalled], true, now).split("\n");
  assert.match(lines[0]!, /^NAMESPACE\s+NAME\s+READY\s+DRIFTED\s+AWAITING APPROVAL\s+STALLED$/);
  assert.match(lines[2]!, /app\/gated\s+False \(AwaitingApproval\)\s+Deployment web: spec.replicas; Service web: missing\s+plan 0123456789ab \(3m\)\s+-$/);
  assert.match(lines[3]!, /ResourceConflict: Deployment stuck is not ours$/);
});

test("reconcile: waits until its request is handled, then for Ready or Stalled of the current generation; a plan waiting needs a person; --timeout as kubectl's", () => {
  const at = "2026-11-26T14:00:00.000Z";
  const cond = (type: "Ready" | "Reconciling" | "Stalled", status: "True" | "False", reason: string, message = "", observedGeneration = 4) => ({ type, status, reason, message, observedGeneration, lastTransitionTime: at });
  const handled = (status: App["status"]) => app({}, { lastHandledReconcileAt: at, observedGeneration: 4, ...status });
  assert.deepEqual(reconcileOutcome(undefined, at), { done: true, exitCode: 1, message: "the object was deleted" });
  assert.equal(reconcileOutcome(app({}, { lastHandledReconcileAt: "earlier", conditions: [cond("Ready", "True", "Available")] }), at).done, false, "Ready from before the request says nothing");
  assert.equal(reconcileOutcome(handled({ conditions: [cond("Ready", "False", "RollingOut"), cond("Reconciling", "True", "RollingOut")] }), at).done, false);
  assert.deepEqual(reconcileOutcome(handled({ conditions: [cond("Ready", "True", "Available", "1 of 1 replicas available")] }), at), { done: true, exitCode: 0, message: "Ready: 1 of 1 replicas available" });
  assert.equal(reconcileOutcome(handled({ conditions: [cond("Ready", "True", "Available", "", 3)] }), at).done, false, "Ready for an older generation");
  assert.deepEqual(reconcileOutcome(handled({ conditions: [cond("Ready", "False", "StackUpdateFailed"), cond("Stalled", "True", "StackUpdateFailed", "boom")] }), at), { done: true, exitCode: 1, message: "Stalled (StackUpdateFailed): boom" });
  // A new spec held back by dependsOn: answered at once, the dependencies named, not a wait for the deadline.
  const waitingFor = "waiting for Memcached/cache: not Ready for generation 1 (Suspended); held back: spec changed (generation 3 -> 4)";
  assert.deepEqual(reconcileOutcome(handled({ conditions: [cond("Ready", "False", "DependencyNotReady", waitingFor), cond("Reconciling", "True", "DependencyNotReady", waitingFor)] }), at), { done: true, exitCode: 1, message: `held back by spec.dependsOn (DependencyNotReady): ${waitingFor}` });
  const preview = { planId: "0123456789ab", generation: 4, basis: "b", reason: "drift: x", time: at, changes: {}, steps: [] };
  assert.equal((reconcileOutcome(handled({ conditions: [cond("Ready", "False", "AwaitingApproval")], preview }), at) as { exitCode: number }).exitCode, 3);
  assert.deepEqual([parseTimeout(undefined), parseTimeout("90s"), parseTimeout("5m"), parseTimeout("1h"), parseTimeout("30")], [300_000, 90_000, 300_000, 3_600_000, 30_000]);
  assert.throws(() => parseTimeout("soon"), UsageError);
});

test("approve shows the plan's changing steps with their paths", () => {
  const preview: PreviewStatus = {
    planId: "0123456789ab", generation: 2, basis: "b", reason: "spec changed (generation 1 -> 2)", time: "2026-01-01T11:59:00Z", changes: { update: 1, same: 2 },
    steps: [{ type: "kubernetes:apps/v1:Deployment", name: "web", step: "update", paths: ["spec.replicas"] }, { type: "kubernetes:core/v1:Service", name: "web", step: "same" }, { type: "pulumi:pulumi:Stack", name: "s", step: "same" }],
  };
  assert.equal(describePlan("app/web in namespace default", preview, new Date("2026-01-01T12:00:00Z")), [
    "app/web in namespace default: plan 0123456789ab waits for approval",
    "  why: spec changed (generation 1 -> 2); generation 2; previewed 60s ago",
    "  update   kubernetes:apps/v1:Deployment web: spec.replicas",
    "  (2 unchanged)",
    "",
  ].join("\n"));
});

test("kubectl's ways of naming an object and an output format", () => {
  assert.deepEqual(parseObjectRef("app/web", "u"), { kind: "App", name: "web" });
  assert.deepEqual(parseObjectRef("Memcacheds.appstack.dev/cache", "u"), { kind: "Memcached", name: "cache" });
  for (const bad of [undefined, "web", "deployment/web", "app/", "app/a/b"]) assert.throws(() => parseObjectRef(bad, "u"), UsageError);
  assert.equal(outputFormat({}, "u"), "table");
  assert.equal(outputFormat({ output: "yaml" }, "u"), "yaml");
  assert.throws(() => outputFormat({ output: "wide" }, "u"), UsageError);
});

test("kubectl's --kubeconfig, --context and -n: the namespace from -n, else the context's, else default", () => {
  const folder = mkdtempSync(join(tmpdir(), "appstack-kubeconfig-"));
  try {
    const file = join(folder, "config");
    writeFileSync(file, [
      "apiVersion: v1", "kind: Config", "current-context: one",
      "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]", "users: [{name: u, user: {token: t}}]",
      "contexts: [{name: one, context: {cluster: c, user: u}}, {name: two, context: {cluster: c, user: u, namespace: team-b}}]",
    ].join("\n"));
    assert.equal(namespaceOf({}, kubeConfigOf({ kubeconfig: file })), "default");
    assert.equal(namespaceOf({}, kubeConfigOf({ kubeconfig: file, context: "two" })), "team-b");
    assert.equal(namespaceOf({ namespace: "team-c" }, kubeConfigOf({ kubeconfig: file, context: "two" })), "team-c");
    assert.throws(() => kubeConfigOf({ kubeconfig: file, context: "three" }), /no context "three"/);
    // --as: the same user, acting as another (kubectl's Impersonate-User); the file is not changed.
    assert.equal(kubeConfigOf({ kubeconfig: file, as: "alice" }).getCurrentUser()?.impersonateUser, "alice");
    assert.equal(kubeConfigOf({ kubeconfig: file }).getCurrentUser()?.impersonateUser, undefined);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});

test("history retention keeps the last N updates of a stack, every file of each; a removed stack leaves nothing", async () => {
  const backend = mkdtempSync(join(tmpdir(), "appstack-retention-"));
  try {
    const folder = join(backend, ".pulumi", "history", "appstack", "app.default.web");
    mkdirSync(folder, { recursive: true });
    // Nanosecond stamps of different widths: ordered by number, not by name.
    const stamps = ["999999999", "1795555239917283814", "1795555243065440655", "1795555264093306833", "1795555283820589227"];
    for (const stamp of stamps) for (const file of ["history.json", "history.json.attrs", "checkpoint.json", "checkpoint.json.attrs"]) writeFileSync(join(folder, `app.default.web-${stamp}.${file}`), "{}");
    writeFileSync(join(folder, "unrelated.txt"), "");
    assert.deepEqual(updatesIn(readdirSync(folder)).map((u) => u.prefix.split("-")[1]), stamps);
    const backups = join(backend, ".pulumi", "backups", "appstack", "app.default.web");
    mkdirSync(backups, { recursive: true });
    writeFileSync(join(backups, "app.default.web.1.json"), "{}");
    const retention = new HistoryRetention(pathToFileURL(backend).href, new StateIo(10_000), createLogger({ level: "error", format: "text", write: () => undefined }), 2);
    assert.equal(await retention.prune("app.default.web"), 3);
    assert.deepEqual(readdirSync(folder).sort(), [...stamps.slice(3).flatMap((s) => ["checkpoint.json", "checkpoint.json.attrs", "history.json", "history.json.attrs"].map((f) => `app.default.web-${s}.${f}`)), "unrelated.txt"].sort());
    assert.equal(existsSync(backups), false);
    assert.equal(await retention.prune("app.default.none"), 0, "a stack without history");

    const stacks = join(backend, ".pulumi", "stacks", "appstack");
    mkdirSync(stacks, { recursive: true });
    for (const file of ["app.default.web.json.bak", "app.default.web.json.bak.attrs", "app.default.web.json.json"]) writeFileSync(join(stacks, file), "{}");
    await retention.removeLeftovers("app.default.web");
    assert.deepEqual(readdirSync(stacks), ["app.default.web.json.json"], "the stack of an object named web.json is another stack");
    assert.equal(existsSync(folder), false);
  } finally {
    rmSync(backend, { recursive: true, force: true });
  }
});

test("a destroyed stack's history entries are kept aside (no checkpoint copies), the last N deleted stacks of all", async () => {
  const backend = mkdtempSync(join(tmpdir(), "appstack-deleted-"));
  try {
    const history = (stack: string) => join(backend, ".pulumi", "history", "appstack", stack);
    const entry = (stack: string, nanos: string, startTime: number, why: "created" | "deleted") => {
      mkdirSync(history(stack), { recursive: true });
      const message = updateMessage({ generation: 1, why });
      writeFileSync(join(history(stack), `${stack}-${nanos}.history.json`), JSON.stringify({ kind: why === "deleted" ? "destroy" : "update", startTime, message, result: "succeeded", resourceChanges: { [why === "deleted" ? "delete" : "create"]: 3 } }));
      writeFileSync(join(history(stack), `${stack}-${nanos}.checkpoint.json`), "{}");
    };
    entry("app.default.web", "999999999", 100, "created");
    entry("app.default.web", "1000000000", 100, "deleted");
    const kept = new DeletedHistory(stateStore(pathToFileURL(backend).href, new StateIo(10_000)), 2);
    await kept.archive("app.default.web", 1_000);
    const found = await kept.latest("app.default.web");
    assert.equal(found?.deletedAt.toISOString(), new Date(1_000).toISOString());
    const rows = historyRows(found.updates.map(summaryOf).reverse());
    assert.deepEqual(rows.map((r) => [r.operation, r.why, r.time]), [["update", "created", "1970-01-01T00:01:40.000Z"], ["destroy", "deleted", "1970-01-01T00:01:40.000Z"]]);
    const archive = join(backend, "deleted-history");
    assert.deepEqual(readdirSync(join(archive, "1000-app.default.web")).sort(), ["app.default.web-1000000000.history.json", "app.default.web-999999999.history.json"]);

    entry("app.default.a", "1", 1, "deleted");
    entry("app.default.b", "1", 1, "deleted");
    await kept.archive("app.default.a", 2_000);
    await kept.archive("app.default.b", 3_000);
    assert.deepEqual(readdirSync(archive).sort(), ["2000-app.default.a", "3000-app.default.b"]);
    assert.equal(await kept.latest("app.default.web"), undefined);
    assert.equal(await kept.latest("app.default.none"), undefined);
  } finally {
    rmSync(backend, { recursive: true, force: true });
  }
});
