// The operator service's start: /healthz answers before any start-up step that waits on the
// network (the stack-lock sweep, on a database that may be slow), /readyz only once the replica has
// started and says it is ready. The steps are stand-ins; every wait is on a fact they report.
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createLogger } from "../../operator/base/log.ts";
import { loadConfig } from "../../operator/manager/config.ts";
import { startService, type Replica, type StartUpSteps } from "../../operator/manager/service.ts";
import type { EngineBinaries } from "../../operator/pulumi/engine.ts";
import { httpGet } from "../helpers/http.ts";

const log = createLogger({ level: "error", format: "json", write: () => undefined });
const config = loadConfig(
  { "health-addr": "127.0.0.1:0", "leader-elect": "false", "backend-url": "postgres://db.example/appstack", "state-dir": join(mkdtempSync(join(tmpdir(), "service-")), "state") },
  { APPSTACK_PASSPHRASE: "p" },
  { readOnly: true },
);

/** A promise, and what settles it. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => (resolve = settle));
  return { promise, resolve };
}

/** A sweep that hangs until released, and a replica that is ready when told; each tells when it is reached. */
function standIns() {
  const sweepStarted = deferred();
  const sweepEnds = deferred();
  const replicaRuns = deferred();
  const replicaStopped = deferred();
  const state = { runs: 0, ready: false };
  const replica: Replica = { operator: () => undefined, ready: () => state.ready, stop: () => Promise.resolve(replicaStopped.resolve()) };
  const steps: StartUpSteps = {
    sweep: () => {
      sweepStarted.resolve();
      return sweepEnds.promise;
    },
    run: () => {
      state.runs++;
      replicaRuns.resolve();
      return replica;
    },
  };
  return { steps, state, sweepStarted, sweepEnds, replicaRuns, replicaStopped };
}

const status = async (base: string, path: string) => (await httpGet(`${base}${path}`)).status;

// The timeout is the old code's failure: it awaited the sweep before serving anything.
test("while the start-up sweep hangs, /healthz answers 200 and /readyz 503, and no replica runs; after it, /readyz is 200 once the replica is ready", { timeout: 10_000 }, async () => {
  const s = standIns();
  const service = await startService(config, {} as EngineBinaries, log, s.steps);
  const base = `http://127.0.0.1:${(service.server.address() as AddressInfo).port}`;
  await s.sweepStarted.promise;
  assert.equal(await status(base, "/healthz"), 200);
  assert.equal(await status(base, "/readyz"), 503);
  assert.equal(s.state.runs, 0, "no replica (and so no engine) before the sweep has ended");

  s.sweepEnds.resolve();
  await s.replicaRuns.promise;
  assert.equal(await status(base, "/readyz"), 503, "started, not yet ready");
  s.state.ready = true;
  assert.equal(await status(base, "/readyz"), 200);
  assert.equal(await status(base, "/healthz"), 200);

  await service.stop();
  await s.replicaStopped.promise;
  assert.equal(service.server.listening, false);
});

test("a stop during the sweep starts no replica, and closes the health server", { timeout: 10_000 }, async () => {
  const s = standIns();
  const service = await startService(config, {} as EngineBinaries, log, s.steps);
  await s.sweepStarted.promise;
  const stopped = service.stop();
  s.sweepEnds.resolve();
  await stopped;
  assert.equal(s.state.runs, 0);
  assert.equal(service.server.listening, false);
});
