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
import { repoRoot } from "../../toolchain/tools.ts";

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
