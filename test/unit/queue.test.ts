import assert from "node:assert/strict";
import { test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { instanceLabel, kindLabel, managedBy, managedByLabel } from "../../components/metadata.ts";
import { childEvents } from "../../operator/controller/child-events.ts";
import { WorkQueue, type Clock } from "../../operator/controller/queue.ts";

/** A clock that moves only when the test says so. */
class FakeClock implements Clock {
  private current = 0;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private nextId = 0;
  now() {
    return this.current;
  }
  setTimeout(fn: () => void, ms: number) {
    const id = ++this.nextId;
    this.timers.push({ at: this.current + ms, fn, id });
    return id;
  }
  clearTimeout(handle: unknown) {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }
  pendingDelays(): number[] {
    return this.timers.map((t) => t.at - this.current).sort((a, b) => a - b);
  }
  advance(ms: number) {
    this.current += ms;
    const due = this.timers.filter((t) => t.at <= this.current);
    this.timers = this.timers.filter((t) => t.at > this.current);
    for (const t of due) t.fn();
  }
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const options = { concurrency: 2, baseDelayMs: 1000, maxDelayMs: 8000 };

test("events for one key coalesce into one run", async () => {
  const runs: string[] = [];
  const queue = new WorkQueue(async (key) => void runs.push(key), { ...options, concurrency: 1 });
  // "a" takes the only worker; the events for "b" pile up behind it.
  queue.add("a");
  queue.add("b");
  queue.add("b");
  queue.add("b");
  assert.equal(queue.depth, 1);
  await queue.idle();
  assert.deepEqual(runs, ["a", "b"]);
});

test("a key never runs twice at once, and an event during a run runs it once more afterwards", async () => {
  let concurrent = 0;
  let maxConcurrent = 0;
  const gates = [deferred(), deferred()];
  let run = 0;
  const queue = new WorkQueue(async () => {
    concurrent++;
    maxConcurrent = Math.max(maxConcurrent, concurrent);
    await gates[run++]!.promise;
    concurrent--;
  }, options);
  queue.add("k");
  await Promise.resolve();
  queue.add("k");
  queue.add("k");
  assert.equal(queue.active, 1);
  gates[0]!.resolve();
  gates[1]!.resolve();
  await queue.idle();
  assert.equal(run, 2);
  assert.equal(maxConcurrent, 1);
});

test("no more than `concurrency` keys run at once, in the order they came", async () => {
  const gate = deferred();
  const started: string[] = [];
  let peak = 0;
  const queue = new WorkQueue(async (key) => {
    started.push(key);
    peak = Math.max(peak, queue.active);
    await gate.promise;
  }, { ...options, concurrency: 3 });
  for (const key of ["a", "b", "c", "d", "e"]) queue.add(key);
  assert.deepEqual(started, ["a", "b", "c"]);
  assert.equal(queue.depth, 2);
  gate.resolve();
  await queue.idle();
  assert.deepEqual(started, ["a", "b", "c", "d", "e"]);
  assert.equal(peak, 3);
});

test("failures back off exponentially up to the cap, and success resets the count", async () => {
  const clock = new FakeClock();
  let failuresLeft = 5;
  let runs = 0;
  const queue = new WorkQueue(async () => {
    runs++;
    if (failuresLeft-- > 0) throw new Error("boom");
  }, { ...options, clock });
  const delays: number[] = [];
  queue.add("k");
  for (let i = 0; i < 5; i++) {
    await queue.idle();
    delays.push(clock.pendingDelays()[0]!);
    clock.advance(delays.at(-1)!);
  }
  await queue.idle();
  assert.deepEqual(delays, [1000, 2000, 4000, 8000, 8000]);
  assert.equal(runs, 6);
  assert.equal(queue.attempts("k"), 0);
  assert.deepEqual(clock.pendingDelays(), []);
});

/** A queue whose key "k" failed its first run and now waits out its first backoff (1 s). */
async function inBackoffAfterOneFailure() {
  const clock = new FakeClock();
  let runs = 0;
  const queue = new WorkQueue(async () => {
    if (++runs === 1) throw new Error("the first run fails");
  }, { ...options, clock });
  queue.add("k");
  await queue.idle();
  assert.deepEqual(clock.pendingDelays(), [1000]);
  return { clock, queue, runs: () => runs };
}

test("a new event runs a key in backoff at once", async () => {
  const { queue, runs } = await inBackoffAfterOneFailure();
  assert.deepEqual(queue.peekBackoff("k"), { attempt: 2, delayMs: 2000 });
  queue.add("k");
  await queue.idle();
  assert.equal(runs(), 2);
});

test("shutdown stops taking work and waits for running handlers", async () => {
  const gate = deferred();
  let finished = false;
  const queue = new WorkQueue(async () => {
    await gate.promise;
    finished = true;
  }, options);
  queue.add("a");
  const stopping = queue.shutdown();
  queue.add("b");
  gate.resolve();
  await stopping;
  assert.ok(finished);
  assert.equal(queue.depth, 0);
});

test("a paused queue collects keys while the caches sync and runs each once when started", async () => {
  const runs: string[] = [];
  const queue = new WorkQueue(async (key) => void runs.push(key), { ...options, paused: true });
  queue.add("App/default/web");
  queue.add("App/default/web");
  queue.add("Memcached/default/cache");
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(runs, []);
  assert.equal(queue.depth, 2);
  queue.start();
  await queue.idle();
  assert.deepEqual(runs, ["App/default/web", "Memcached/default/cache"]);
});

test("a resync adds every key but those waiting for a retry: only an event cuts a backoff short", async () => {
  const clock = new FakeClock();
  const runs: string[] = [];
  const queue = new WorkQueue(async (key) => {
    runs.push(key);
    if (key === "failing") throw new Error("still failing");
  }, { ...options, clock });
  queue.add("failing");
  await queue.idle();
  assert.deepEqual(clock.pendingDelays(), [1000]);
  queue.resync(["failing", "settled"]);
  await queue.idle();
  assert.deepEqual(runs, ["failing", "settled"]);
  queue.add("failing");
  await queue.idle();
  assert.deepEqual(runs, ["failing", "settled", "failing"]);
});

test("a status change leaves a key in backoff to its retry; a change runs it at once", async () => {
  const clock = new FakeClock();
  let runs = 0;
  const queue = new WorkQueue(async () => {
    if (++runs <= 2) throw new Error("up fails");
  }, { ...options, clock });
  queue.add("k");
  await queue.idle();
  assert.deepEqual(clock.pendingDelays(), [1000]);
  queue.addUnlessWaiting("k");
  queue.addUnlessWaiting("k");
  await queue.idle();
  assert.equal(runs, 1, "a status change ran a key in backoff");
  clock.advance(1000);
  await queue.idle();
  assert.equal(runs, 2, "the retry runs when its backoff ends");
  assert.deepEqual(clock.pendingDelays(), [2000]);
  queue.add("k");
  await queue.idle();
  assert.equal(runs, 3, "a change cuts the backoff short");
});

test("a status change during a failing run waits for the backoff that run ends in", async () => {
  const clock = new FakeClock();
  const gate = deferred();
  let runs = 0;
  const queue = new WorkQueue(async () => {
    runs++;
    await gate.promise;
    throw new Error("up fails");
  }, { ...options, clock });
  queue.add("k");
  await Promise.resolve();
  queue.addUnlessWaiting("k");
  gate.resolve();
  await queue.idle();
  assert.equal(runs, 1);
  assert.deepEqual(clock.pendingDelays(), [1000]);
});

test("a status change during a run that succeeds runs the key again: the status it wrote may be old", async () => {
  const clock = new FakeClock();
  const gate = deferred();
  let runs = 0;
  const queue = new WorkQueue(async () => {
    if (++runs === 1) await gate.promise;
  }, { ...options, clock });
  queue.add("k");
  await Promise.resolve();
  queue.addUnlessWaiting("k");
  gate.resolve();
  await queue.idle();
  assert.equal(runs, 2);
});

test("a run replaces a pending retry: once a change has fixed a key in backoff, status changes run it again", async () => {
  const { clock, queue, runs } = await inBackoffAfterOneFailure();
  queue.add("k");
  await queue.idle();
  assert.equal(runs(), 2);
  assert.deepEqual(clock.pendingDelays(), [], "the retry of a failure a later run succeeded stays pending");
  queue.addUnlessWaiting("k");
  await queue.idle();
  assert.equal(runs(), 3);
});

test("through the watch's handlers: a child's status-only update waits for the backoff, its spec change or deletion does not", async () => {
  const clock = new FakeClock();
  let runs = 0;
  const queue = new WorkQueue(async () => {
    runs++;
    throw new Error("up fails");
  }, { ...options, clock });
  const deployments = childEvents(queue, false);
  const pods = childEvents(queue, true);
  const labels = { [managedByLabel]: managedBy, [kindLabel]: "App", [instanceLabel]: "web" };
  const deployment = (resourceVersion: string, replicas: number, readyReplicas: number) =>
    ({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "web", namespace: "default", uid: "d-1", resourceVersion, labels }, spec: { replicas }, status: { readyReplicas } }) as KubernetesObject;
  const pod = (resourceVersion: string, restartCount: number) =>
    ({ apiVersion: "v1", kind: "Pod", metadata: { name: "web-1", namespace: "default", uid: "p-1", resourceVersion, labels }, status: { containerStatuses: [{ restartCount }] } }) as KubernetesObject;
  deployments("add")(deployment("1", 2, 0));
  await queue.idle();
  assert.equal(runs, 1);
  assert.deepEqual(clock.pendingDelays(), [1000]);
  deployments("update")(deployment("2", 2, 1));
  pods("update")(pod("3", 1));
  pods("update")(pod("4", 2));
  await queue.idle();
  assert.equal(runs, 1, "a status-only event ran a key in backoff");
  clock.advance(1000);
  await queue.idle();
  assert.equal(runs, 2, "the retry runs when its backoff ends");
  deployments("update")(deployment("5", 5, 1));
  await queue.idle();
  assert.equal(runs, 3, "a spec change of a child (drift) runs it at once");
  deployments("delete")(deployment("6", 5, 1));
  await queue.idle();
  assert.equal(runs, 4, "a deleted child runs it at once");
});
