// The Automation API follows every `up` with `pulumi stack output` twice and `pulumi stack history`
// once (its Stack.outputs() and Stack.info()), and every refresh and destroy with `stack history`:
// each a Pulumi process of 0.3 to 0.6 CPU s (it derives the passphrase key again), whose answers
// appstack uses only for the summary. The engine's own event stream ends with that summary, so a
// stack the driver runs answers outputs() and info() from the stream, and starts no process.
//
// This relies on Stack.up, refresh and destroy calling this.outputs() and this.info() once the
// engine has exited, which the Automation API does not document: test/unit/engine-calls.test.ts
// fails on an SDK that no longer does, and test/e2e/engine-cost.test.ts counts the processes.
import type { EngineEvent, OutputMap, Stack, UpdateKind, UpdateSummary } from "@pulumi/pulumi/automation/index.js";

const latest = new WeakMap<Stack, UpdateSummary>();

/** Makes `stack` answer outputs() and info() from its last operation's summary event. */
export function answerFromEvents(stack: Stack): Stack {
  return Object.assign(stack, {
    // appstack reads no stack outputs: status comes from the live children.
    outputs: (): Promise<OutputMap> => Promise.resolve({}),
    info: (): Promise<UpdateSummary | undefined> => Promise.resolve(latest.get(stack)),
  });
}

/** The onEvent of one operation on `stack`: keeps the summary that info() will answer with. */
export function summaryRecorder(stack: Stack, kind: UpdateKind): (event: EngineEvent) => void {
  latest.delete(stack);
  const startTime = new Date();
  return (event) => {
    if (!event.summaryEvent) return;
    // Only a successful run gets as far as info(): a failed one throws first.
    latest.set(stack, { kind, startTime, endTime: new Date(), result: "succeeded", resourceChanges: event.summaryEvent.resourceChanges } as UpdateSummary);
  };
}
