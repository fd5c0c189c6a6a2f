// The stack driver answers Stack.outputs() and Stack.info() from the engine's event stream instead
// of letting the Automation API start `stack output` and `stack history` processes after each
// operation (operator/pulumi/summaries.ts). The Automation API does not document that up, refresh
// and destroy call those two methods: these tests fail loudly on an SDK that stops doing so, or
// starts another process after the engine's run.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Stack } from "@pulumi/pulumi/automation/index.js";
import { answerFromEvents, summaryRecorder } from "../../operator/pulumi/summaries.ts";

const source = (method: "up" | "refresh" | "destroy") => (Stack.prototype[method] as (...args: unknown[]) => unknown).toString();

test("the pinned Automation API follows up, refresh and destroy with this.info() (and up with this.outputs()), and runs one command each", () => {
  assert.match(source("up"), /this\.outputs\(\)/);
  for (const method of ["up", "refresh", "destroy"] as const) {
    assert.match(source(method), /this\.info\(/, `Stack.${method} no longer calls this.info()`);
    assert.equal(source(method).match(/this\.runPulumiCmd\(/g)?.length, 1, `Stack.${method} runs more than the engine`);
  }
});

test("a stack the driver runs answers info() with the summary event of its last operation, and outputs() with nothing", async () => {
  const stack = answerFromEvents(Object.create(Stack.prototype) as Stack);
  const onEvent = summaryRecorder(stack, "update");
  assert.equal(await stack.info(), undefined);
  onEvent({ sequence: 1, timestamp: 0, diagnosticEvent: { message: "m", color: "never", severity: "info" } });
  onEvent({ sequence: 2, timestamp: 0, summaryEvent: { maybeCorrupt: false, durationSeconds: 1, resourceChanges: { create: 5 }, policyPacks: {} } });
  const summary = await stack.info();
  assert.equal(summary?.result, "succeeded");
  assert.equal(summary?.kind, "update");
  assert.deepEqual(summary?.resourceChanges, { create: 5 });
  assert.deepEqual(await stack.outputs(), {});
  // The next operation starts without the last one's summary.
  summaryRecorder(stack, "destroy");
  assert.equal(await stack.info(), undefined);
});
