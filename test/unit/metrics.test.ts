// The reconcile metrics count what happened: a reconcile that waited on a stack lock, forgot a
// stack or was stopped for the handover is no successful sync, and no error either.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { ReportedFailure } from "../../operator/controller/errors.ts";
import type { HandlerResult } from "../../operator/controller/queue.ts";
import { buildVersion } from "../../operator/manager/build-info.ts";
import { OperatorMetrics } from "../../operator/manager/metrics.ts";
import { stalledObjects } from "../../operator/manager/stalled-objects.ts";
import type { Workload } from "../../crds/types.ts";
import { repoRoot } from "../../toolchain/tools.ts";
import { metricValue } from "../helpers/operator.ts";

async function counted(result: HandlerResult | Error) {
  const metrics = new OperatorMetrics(() => ({ depth: 0, active: 0 }));
  await metrics.reconcile("App/default/web", () => (result instanceof Error ? Promise.reject(result) : Promise.resolve(result))).catch(() => undefined);
  const reconciles = (await metrics.reconciles.get()).values.filter((v) => v.value > 0).map((v) => v.labels["result"]);
  const errors = (await metrics.reconcileErrors.get()).values.filter((v) => v.value > 0).map((v) => v.labels["reason"]);
  const lastSync = (await metrics.lastSuccessfulSync.get()).values[0]?.value ?? 0;
  return { reconciles, errors, synced: lastSync > 0 };
}

test("a reconcile that is done is a success and a sync", async () => {
  assert.deepEqual(await counted(undefined), { reconciles: ["success"], errors: [], synced: true });
});

test("waiting on a stack lock, a forgotten stack, a handover and a requeue are counted as such, never as a successful sync", async () => {
  for (const outcome of ["locked", "forgotten", "interrupted", "requeued"] as const) {
    assert.deepEqual(await counted({ outcome, requeueAfterMs: 5_000 }), { reconciles: [outcome], errors: [], synced: false }, outcome);
  }
});

test("a failure is an error, by its reason", async () => {
  assert.deepEqual(await counted(new ReportedFailure("DestroyFailed", "boom")), { reconciles: ["error"], errors: ["DestroyFailed"], synced: false });
});

test("appstack_build_info names the build: the image's APPSTACK_VERSION, else package.json's version", async () => {
  const metrics = await new OperatorMetrics(() => ({ depth: 0, active: 0 })).registry.metrics();
  const version = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string }).version;
  const expected = process.env["APPSTACK_VERSION"]?.trim() || version;
  assert.ok(metrics.includes(`appstack_build_info{version="${expected}",node_version="${process.version}"} 1`), metrics);
  assert.equal(buildVersion({ APPSTACK_VERSION: "0.1.1" }), "0.1.1");
  assert.equal(buildVersion({ APPSTACK_VERSION: "" }), version);
  assert.equal(buildVersion({}), version);
});

// Metrics per object (APPSTACK_OBJECT_METRICS): what a reconcile and the engine's operations record
// for one object, and that an object gone from the caches leaves no series behind.
const objectSeries = async (metrics: OperatorMetrics) => (await metrics.registry.metrics()).split("\n").filter((line) => line.startsWith("appstack_object_"));

/** A reconcile of `key` that runs the given engine operations on its stack (as the stack driver reports them), then ends with `result`. */
async function reconcileWith(metrics: OperatorMetrics, key: string, operations: [operation: "up" | "refresh" | "preview" | "destroy", changes?: Record<string, number>][], result: HandlerResult | Error = undefined, present = true) {
  const [kind, namespace, name] = key.split("/") as [string, string, string];
  await metrics.reconcile(key, async () => {
    for (const [operation, resourceChanges] of operations) {
      metrics.operationObserver.started();
      metrics.operationObserver.finished(operation, "succeeded", 2, { stack: `${kind.toLowerCase()}.${namespace}.${name}`, ...(resourceChanges ? { resourceChanges } : {}) });
    }
    if (result instanceof Error) throw result;
    return result;
  }, () => present).catch(() => undefined);
}

const labels = (line: string) => line.slice(line.indexOf("{"), line.lastIndexOf("}") + 1);

test("per object, off by default: no series of any object, whatever ran", async () => {
  const metrics = new OperatorMetrics(() => ({ depth: 0, active: 0 }));
  await reconcileWith(metrics, "App/default/web", [["up", { create: 4 }]]);
  assert.equal(metrics.objects, undefined);
  assert.deepEqual(await objectSeries(metrics), []);
  assert.doesNotMatch(await metrics.registry.metrics(), /appstack_object_/, "not even their HELP lines");
});

test("per object, on: reconcile and operation durations, resources created, changed and deleted by operation, and the last success, labelled {kind, namespace, name}", async () => {
  const metrics = new OperatorMetrics(() => ({ depth: 0, active: 0 }), undefined, { objectMetrics: true });
  const before = Date.now() / 1000;
  await reconcileWith(metrics, "App/default/web", [["up", { create: 4 }]]);
  await reconcileWith(metrics, "App/default/web", [["refresh", { same: 3, update: 1 }], ["up", { same: 3, update: 1, replace: 1, delete: 1 }]]);
  // A preview is timed but changes nothing: its planned steps are not counted.
  await reconcileWith(metrics, "Memcached/team-a/cache", [["preview", { create: 3 }]], { outcome: "requeued", requeueAfterMs: 1_000 });
  const web = 'kind="App",namespace="default",name="web"';
  const value = async (name: string, extra = "") => metricValue(await metrics.registry.metrics(), name, Object.fromEntries([...`${web}${extra}`.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!])));
  assert.equal(await value("appstack_object_reconcile_duration_seconds_count"), 2);
  assert.equal(await value("appstack_object_operation_duration_seconds_count", ',operation="up"'), 2);
  assert.equal(await value("appstack_object_operation_duration_seconds_sum", ',operation="up"'), 4);
  assert.equal(await value("appstack_object_operation_duration_seconds_count", ',operation="refresh"'), 1);
  assert.equal(await value("appstack_object_resources_total", ',operation="up",change="created"'), 4);
  assert.equal(await value("appstack_object_resources_total", ',operation="up",change="changed"'), 2, "an update and a replacement");
  assert.equal(await value("appstack_object_resources_total", ',operation="up",change="deleted"'), 1);
  assert.equal(await value("appstack_object_resources_total", ',operation="refresh",change="changed"'), 1);
  assert.ok((await value("appstack_object_last_success_timestamp_seconds"))! >= Math.floor(before));

  const cache = (await objectSeries(metrics)).filter((line) => line.includes('name="cache"'));
  assert.ok(cache.some((line) => line.startsWith("appstack_object_operation_duration_seconds_count") && labels(line) === '{kind="Memcached",namespace="team-a",name="cache",operation="preview"}'), cache.join("\n"));
  assert.ok(!cache.some((line) => line.startsWith("appstack_object_resources_total")), "a preview changes nothing");
  assert.ok(!cache.some((line) => line.startsWith("appstack_object_last_success")), "a requeued reconcile is no success");

  // A failure is timed too, and is no success.
  await reconcileWith(metrics, "App/default/failing", [], new ReportedFailure("StackUpdateFailed", "boom"));
  const failing = (await objectSeries(metrics)).filter((line) => line.includes('name="failing"'));
  assert.ok(failing.some((line) => line.startsWith("appstack_object_reconcile_duration_seconds_count") && line.endsWith(" 1")), failing.join("\n"));
  assert.ok(!failing.some((line) => line.startsWith("appstack_object_last_success")));

  // An operation on a stack no reconcile named (the command line's, say) belongs to no object here.
  metrics.operationObserver.started();
  metrics.operationObserver.finished("up", "succeeded", 1, { stack: "app.default.stranger", resourceChanges: { create: 1 } });
  assert.ok(!(await objectSeries(metrics)).some((line) => line.includes("stranger")));
});

test("per object: an object gone from the caches (deleted, or moved to another replica) takes every series of its own with it", async () => {
  const metrics = new OperatorMetrics(() => ({ depth: 0, active: 0 }), undefined, { objectMetrics: true });
  await reconcileWith(metrics, "App/default/web", [["preview"], ["up", { create: 4 }], ["refresh", { update: 1 }]]);
  await reconcileWith(metrics, "App/default/other", [["up", { create: 4 }]]);
  assert.ok((await objectSeries(metrics)).some((line) => line.includes('name="web"')));
  // Its deletion: the destroy runs while it is still there; the reconcile after it finds it gone.
  await reconcileWith(metrics, "App/default/web", [["destroy", { delete: 4 }]]);
  await reconcileWith(metrics, "App/default/web", [], undefined, false);
  const left = await objectSeries(metrics);
  assert.deepEqual(left.filter((line) => line.includes('name="web"')), []);
  assert.ok(left.some((line) => line.includes('name="other"')), "the other object's stay");
  // Created again under the same name: counted afresh.
  await reconcileWith(metrics, "App/default/web", [["up", { create: 4 }]]);
  assert.equal(metricValue(await metrics.registry.metrics(), "appstack_object_resources_total", { name: "web", operation: "up", change: "created" }), 4);
});

// appstack_stalled_objects: the objects of the caches whose Stalled condition is True, by kind and
// reason, read at each scrape; what the shipped alert AppstackObjectStalled reads.
test("appstack_stalled_objects counts the cached objects Stalled now, by kind and reason, and none that are not", async () => {
  const condition = (type: string, status: string, reason: string) => ({ type, status, reason, message: "", lastTransitionTime: "2026-11-28T00:00:00Z" });
  const objects: Record<string, Workload> = {
    "App/a/web": { kind: "App", metadata: { name: "web", namespace: "a" }, spec: { image: "nginx" }, status: { conditions: [condition("Ready", "False", "ResourceConflict"), condition("Stalled", "True", "ResourceConflict")] } },
    "App/b/web": { kind: "App", metadata: { name: "web", namespace: "b" }, spec: { image: "nginx" }, status: { conditions: [condition("Stalled", "True", "ResourceConflict")] } },
    "Memcached/a/cache": { kind: "Memcached", metadata: { name: "cache", namespace: "a" }, spec: {}, status: { conditions: [condition("Stalled", "True", "StackUpdateFailed")] } },
    "App/a/fine": { kind: "App", metadata: { name: "fine", namespace: "a" }, spec: { image: "nginx" }, status: { conditions: [condition("Ready", "True", "Available"), condition("Stalled", "False", "Available")] } },
    "App/a/new": { kind: "App", metadata: { name: "new", namespace: "a" }, spec: { image: "nginx" } },
  } as unknown as Record<string, Workload>;
  const cache = { keys: () => Object.keys(objects), workload: (kind: string, namespace: string, name: string) => objects[`${kind}/${namespace}/${name}`] };
  let cached: typeof cache | undefined = cache;
  const metrics = new OperatorMetrics(() => ({ depth: 0, active: 0 }), undefined, { stalled: () => (cached ? stalledObjects(cached) : []) });
  const series = async () => (await metrics.registry.metrics()).split("\n").filter((line) => line.startsWith("appstack_stalled_objects{"));
  assert.deepEqual((await series()).sort(), [
    'appstack_stalled_objects{kind="App",reason="ResourceConflict"} 2',
    'appstack_stalled_objects{kind="Memcached",reason="StackUpdateFailed"} 1',
  ]);
  // No operator running (a standby): no series at all, not the last ones seen.
  cached = undefined;
  assert.deepEqual(await series(), []);
});
