// A watch whose connection goes silent (half-open) ends by its own deadline, and its connection is
// closed: client-node's Watch alone would wait for ever.
import assert from "node:assert/strict";
import { test } from "node:test";
import { BoundedWatch, WatchExpired } from "../../operator/kube/bounded-watch.ts";
import { silentServer } from "../helpers/silent-api-server.ts";

/** Starts a watch; resolves with what its `done` got, or "still watching" after 5 s. */
async function watchUntilDone(watch: BoundedWatch, events: string[]): Promise<unknown> {
  let finish!: (value: unknown) => void;
  const done = new Promise<unknown>((resolve) => (finish = resolve));
  await watch.watch("/api/v1/pods", { resourceVersion: "7" }, (phase) => void events.push(phase), finish);
  return Promise.race([done, new Promise((resolve) => setTimeout(() => resolve("still watching after 5 s"), 5_000).unref())]);
}

const bounds = { timeoutMs: 1_000, graceMs: 500 };

test("a watch that goes silent after its first event ends at its deadline, and its connection is closed", { timeout: 15_000 }, async () => {
  const server = await silentServer((res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.write(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: "p", resourceVersion: "8" } } })}\n`);
  });
  try {
    const events: string[] = [];
    const started = Date.now();
    const outcome = await watchUntilDone(new BoundedWatch(server.config, bounds), events);
    const elapsed = Date.now() - started;
    assert.ok(outcome instanceof WatchExpired, String(outcome));
    assert.ok(elapsed >= 1_400 && elapsed < 4_000, `ended after ${elapsed} ms`);
    assert.deepEqual(events, ["ADDED"]);
    await server.closed[0];
    // The API server was asked to end the watch itself, and to send bookmarks.
    assert.equal(server.requests[0]?.searchParams.get("timeoutSeconds"), "1");
    assert.equal(server.requests[0]?.searchParams.get("allowWatchBookmarks"), "true");
    assert.equal(server.requests[0]?.searchParams.get("resourceVersion"), "7");
  } finally {
    server.close();
  }
});

test("a watch whose request is never answered ends at its deadline too", { timeout: 15_000 }, async () => {
  const server = await silentServer(() => undefined);
  try {
    const outcome = await watchUntilDone(new BoundedWatch(server.config, bounds), []);
    assert.ok(outcome instanceof WatchExpired, String(outcome));
    await server.closed[0];
  } finally {
    server.close();
  }
});

test("close() ends a watch still waiting for its answer, closes its connection, and opens no other", { timeout: 15_000 }, async () => {
  const server = await silentServer(() => undefined);
  try {
    const watch = new BoundedWatch(server.config, { timeoutMs: 60_000, graceMs: 15_000 });
    let ended!: (error: unknown) => void;
    const done = new Promise<unknown>((resolve) => (ended = resolve));
    // Not awaited: the request is not answered, so the watch call itself waits.
    const watching = watch.watch("/api/v1/pods", {}, () => undefined, ended);
    await eventuallyTrue(() => server.requests.length === 1);
    watch.close();
    assert.match(String(await done), /closed/);
    await server.closed[0];
    await watching;
    let doneAgain = false;
    await watch.watch("/api/v1/pods", {}, () => undefined, () => (doneAgain = true));
    assert.equal(server.requests.length, 1);
    assert.equal(doneAgain, false);
  } finally {
    server.close();
  }
});

test("a watch the API server accepts is told as open; one it answers 403 is not, and ends with the status", { timeout: 15_000 }, async () => {
  for (const status of [200, 403]) {
    const server = await silentServer((res) => {
      res.writeHead(status, { "content-type": "application/json" });
      if (status === 200) res.flushHeaders();
      else res.end(JSON.stringify({ kind: "Status", code: status }));
    });
    try {
      let opened = 0;
      const outcome = await watchUntilDone(new BoundedWatch(server.config, bounds, () => (opened += 1)), []);
      if (status === 200) {
        assert.equal(opened, 1);
      } else {
        assert.equal(opened, 0);
        assert.equal((outcome as { statusCode?: number }).statusCode, 403);
      }
    } finally {
      server.close();
    }
  }
});

async function eventuallyTrue(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 10));
}
