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
/** The service's settings on a PostgreSQL backend of this URL (the default: no sslmode, no CA). */
const configOf = (backendUrl = "postgres://db.example/appstack") =>
  loadConfig(
    { "health-addr": "127.0.0.1:0", "leader-elect": "false", "backend-url": backendUrl, "state-dir": join(mkdtempSync(join(tmpdir(), "service-")), "state") },
    { APPSTACK_PASSPHRASE: "p" },
    { readOnly: true },
  );
const config = configOf();

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

/** `backendUrl`'s service started with stand-ins and its replica ready; what it logged at start, and its /readyz and /healthz. */
async function readyService(backendUrl: string): Promise<{ logged: { level: string; msg: string }[]; readyz: { status: number; body: string }; healthz: string }> {
  const logged: { level: string; msg: string }[] = [];
  const warnLog = createLogger({ level: "warn", format: "json", write: (line) => logged.push(JSON.parse(line) as (typeof logged)[number]) });
  const s = standIns();
  const service = await startService(configOf(backendUrl), {} as EngineBinaries, warnLog, s.steps);
  try {
    const base = `http://127.0.0.1:${(service.server.address() as AddressInfo).port}`;
    s.sweepEnds.resolve();
    await s.replicaRuns.promise;
    s.state.ready = true;
    return { logged, readyz: await httpGet(`${base}/readyz`), healthz: (await httpGet(`${base}/healthz`)).body };
  } finally {
    await service.stop();
  }
}

test("a state database whose certificate is not verified: said at warn when the service starts, and under /readyz's answer, which stays 200 once ready; nothing of it under verify-full", { timeout: 10_000 }, async () => {
  const warning = /^the server's certificate is not verified: sslmode=require encrypts but accepts any certificate.*; give a CA \(PGSSLROOTCERT \/ appstack:backendCaSecret\) and sslmode=verify-full$/;
  const unverified = await readyService("postgres://appstack:s3cret@db.example/appstack?sslmode=require");
  assert.deepEqual(unverified.logged.map((line) => line.level), ["warn"], JSON.stringify(unverified.logged));
  assert.match(unverified.logged[0]!.msg, warning);
  assert.ok(!JSON.stringify(unverified.logged).includes("s3cret"), "the log carries no password");
  assert.equal(unverified.readyz.status, 200);
  const [verdict, ...details] = unverified.readyz.body.trimEnd().split("\n");
  assert.equal(verdict, "ok");
  assert.equal(details.length, 1, unverified.readyz.body);
  assert.match(details[0]!.replace(/^warning: /, ""), warning);
  assert.equal(unverified.healthz, "ok\n", "a warning of readiness only");

  const verified = await readyService("postgres://db.example/appstack?sslmode=verify-full");
  assert.deepEqual(verified.logged, []);
  assert.deepEqual({ status: verified.readyz.status, body: verified.readyz.body }, { status: 200, body: "ok\n" });
});
