import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { loadConfig } from "../../operator/manager/config.ts";

const stateDir = mkdtempSync(join(tmpdir(), "appstack-config-"));
after(() => rmSync(stateDir, { recursive: true, force: true }));

test("defaults suit one local operator; flags win over the environment", () => {
  const config = loadConfig([], { APPSTACK_STATE_DIR: stateDir });
  assert.equal(config.namespaces, "all");
  assert.equal(config.concurrency, 3);
  assert.equal(config.backendUrl, `file://${stateDir}/backend`);
  assert.equal(config.healthPort, 8081);
  assert.equal(config.leaderElection?.name, "appstack-operator");
  // The generated passphrase is kept, so the stacks stay readable after a restart.
  assert.equal(config.passphrase, readFileSync(join(stateDir, "passphrase"), "utf8"));
  assert.equal(loadConfig([], { APPSTACK_STATE_DIR: stateDir }).passphrase, config.passphrase);

  const tuned = loadConfig(["--concurrency=5", "--namespaces=a, b", "--leader-elect=false", "--health-addr=:9000"], { APPSTACK_STATE_DIR: stateDir, APPSTACK_CONCURRENCY: "2" });
  assert.equal(tuned.concurrency, 5);
  assert.deepEqual(tuned.namespaces, ["a", "b"]);
  assert.equal(tuned.leaderElection, undefined);
  assert.deepEqual([tuned.healthHost, tuned.healthPort], ["0.0.0.0", 9000]);
});

test("bad settings are refused with the setting's name", () => {
  assert.throws(() => loadConfig(["--concurrency=0"], { APPSTACK_STATE_DIR: stateDir }), /concurrency must be a positive integer/);
  assert.throws(() => loadConfig(["--log-level=loud"], { APPSTACK_STATE_DIR: stateDir }), /unknown log level loud/);
  // Secrets in a shared backend must not depend on a file beside one replica.
  assert.throws(() => loadConfig(["--backend-url=s3://bucket"], { APPSTACK_STATE_DIR: stateDir }), /APPSTACK_PASSPHRASE/);
  assert.equal(loadConfig(["--backend-url=s3://bucket"], { APPSTACK_STATE_DIR: stateDir, APPSTACK_PASSPHRASE: "p" }).passphrase, "p");
});
