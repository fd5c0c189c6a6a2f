import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { parseFlags, UsageError } from "../../operator/cmd/flags.ts";
import { operatorUsage } from "../../operator/cmd/main.ts";
import { loadConfig, operatorOptions } from "../../operator/manager/config.ts";

const flags = (argv: string[]) => parseFlags(argv, operatorOptions, operatorUsage);

const stateDir = mkdtempSync(join(tmpdir(), "appstack-config-"));
after(() => rmSync(stateDir, { recursive: true, force: true }));

test("defaults suit one local operator; flags win over the environment", () => {
  const config = loadConfig({}, { APPSTACK_STATE_DIR: stateDir });
  assert.equal(config.namespaces, "all");
  // One per core, at least two: 2 on this project's 2-core machines.
  assert.equal(config.concurrency, availableParallelism() + 1);
  assert.equal(config.backendUrl, `file://${stateDir}/backend`);
  assert.equal(config.healthPort, 8081);
  assert.equal(config.leaderElection?.name, "appstack-operator");
  // The generated passphrase is kept, so the stacks stay readable after a restart.
  assert.equal(config.passphrase, readFileSync(join(stateDir, "passphrase"), "utf8"));
  assert.equal(loadConfig({}, { APPSTACK_STATE_DIR: stateDir }).passphrase, config.passphrase);

  const tuned = loadConfig(flags(["--concurrency=5", "--namespaces", "a, b", "--leader-elect=false", "--health-addr=:9000", "--metrics-addr=:9443"]), { APPSTACK_STATE_DIR: stateDir, APPSTACK_CONCURRENCY: "2" });
  assert.equal(tuned.concurrency, 5);
  assert.deepEqual(tuned.namespaces, ["a", "b"]);
  assert.equal(tuned.leaderElection, undefined);
  assert.deepEqual([tuned.healthHost, tuned.healthPort], ["0.0.0.0", 9000]);
  assert.deepEqual(tuned.metrics, { host: "0.0.0.0", port: 9443, secure: true });

  // Metrics per object grow with the objects: off unless asked for.
  assert.equal(config.objectMetrics, false);
  assert.equal(loadConfig({}, { APPSTACK_STATE_DIR: stateDir, APPSTACK_OBJECT_METRICS: "true" }).objectMetrics, true);
  assert.equal(loadConfig(flags(["--object-metrics=false"]), { APPSTACK_STATE_DIR: stateDir, APPSTACK_OBJECT_METRICS: "true" }).objectMetrics, false);
});

test("/metrics: beside /healthz in plain HTTP only on loopback; on an address of its own HTTPS, plain only on loopback", () => {
  const env = { APPSTACK_STATE_DIR: stateDir };
  // Local runs: one loopback port for the probes and /metrics.
  assert.equal(loadConfig({}, env).metrics, undefined);
  assert.equal(loadConfig(flags(["--health-addr=[::1]:8081"]), env).healthHost, "::1");
  assert.throws(() => loadConfig(flags(["--health-addr=:8081"]), env), /only on a loopback address, and the health address is 0\.0\.0\.0:8081: set APPSTACK_METRICS_ADDR/);
  assert.throws(() => loadConfig({}, { ...env, APPSTACK_HEALTH_ADDR: "10.0.0.5:8081" }), /set APPSTACK_METRICS_ADDR/);
  // As the install runs it: HTTPS on every interface, its certificate from the mounted Secret.
  const installed = loadConfig({}, { ...env, APPSTACK_HEALTH_ADDR: ":8081", APPSTACK_METRICS_ADDR: ":8443", APPSTACK_METRICS_CERT_DIR: "/etc/appstack/metrics-cert" });
  assert.deepEqual(installed.metrics, { host: "0.0.0.0", port: 8443, secure: true, certDir: "/etc/appstack/metrics-cert" });
  assert.deepEqual(loadConfig(flags(["--metrics-addr=127.0.0.1:9090", "--metrics-secure=false"]), env).metrics, { host: "127.0.0.1", port: 9090, secure: false });
  assert.throws(() => loadConfig(flags(["--metrics-addr=:9090", "--metrics-secure=false"]), env), /plain HTTP \(APPSTACK_METRICS_SECURE=false\) serves \/metrics only on a loopback address, not 0\.0\.0\.0:9090/);
  assert.throws(() => loadConfig(flags(["--metrics-addr=127.0.0.1:9090", "--metrics-secure=maybe"]), env), /metrics-secure must be true or false/);
});

test("bad settings are refused with the setting's name", () => {
  assert.throws(() => loadConfig({ concurrency: "0" }, { APPSTACK_STATE_DIR: stateDir }), /concurrency must be a positive integer/);
  assert.throws(() => loadConfig({ "log-level": "loud" }, { APPSTACK_STATE_DIR: stateDir }), /unknown log level loud/);
  assert.throws(() => loadConfig({ "object-metrics": "yes" }, { APPSTACK_STATE_DIR: stateDir }), /object metrics must be true or false, not "yes"/);
  // Secrets in a shared backend must not depend on a file beside one replica.
  assert.throws(() => loadConfig({ "backend-url": "s3://bucket" }, { APPSTACK_STATE_DIR: stateDir }), /APPSTACK_PASSPHRASE/);
  assert.equal(loadConfig({ "backend-url": "s3://bucket" }, { APPSTACK_STATE_DIR: stateDir, APPSTACK_PASSPHRASE: "p" }).passphrase, "p");
});

test("the passphrase from the file APPSTACK_PASSPHRASE_FILE names, byte for byte, or PULUMI_CONFIG_PASSPHRASE_FILE, trimmed as Pulumi reads it; the passphrase itself in a variable wins", () => {
  const file = join(stateDir, "mounted-passphrase");
  writeFileSync(file, "from-the-secret\n");
  const shared = { APPSTACK_STATE_DIR: stateDir, APPSTACK_BACKEND_URL: "s3://bucket" };
  // As the Secret's key holds it: a final newline is part of the passphrase, as it was in the variable.
  assert.equal(loadConfig({}, { ...shared, APPSTACK_PASSPHRASE_FILE: file }).passphrase, "from-the-secret\n");
  assert.equal(loadConfig({}, { ...shared, PULUMI_CONFIG_PASSPHRASE_FILE: file }).passphrase, "from-the-secret");
  assert.equal(loadConfig({}, { ...shared, APPSTACK_PASSPHRASE_FILE: file, APPSTACK_PASSPHRASE: "local" }).passphrase, "local");
  assert.throws(() => loadConfig({}, { ...shared, APPSTACK_PASSPHRASE_FILE: join(stateDir, "absent") }), /the passphrase file .*absent cannot be read/);
});

test("flags are strict: both forms of a value work, and anything unknown or incomplete is an error with the usage", () => {
  // `--namespaces a` (space form) used to be ignored silently, and every namespace was watched.
  assert.deepEqual({ ...flags(["--namespaces", "a"]) }, { namespaces: "a" });
  assert.deepEqual({ ...flags(["--namespaces=a,b", "--kubeconfig", "/k"]) }, { namespaces: "a,b", kubeconfig: "/k" });
  for (const argv of [["--namespace=a"], ["--namespaces"], ["stray"], ["-n", "a"]]) {
    assert.throws(() => flags(argv), (error: unknown) => error instanceof UsageError && /usage: appstack operator/.test(error.message), argv.join(" "));
  }
});

test("a read-only load (appstack preview) creates no state folder and no passphrase file", () => {
  const untouched = join(stateDir, "never-used");
  const config = loadConfig({ "state-dir": untouched }, {}, { readOnly: true });
  assert.equal(config.backendUrl, `file://${untouched}/backend`);
  assert.equal(existsSync(untouched), false);
});

test("sharding is off unless asked for, and needs leader election", () => {
  assert.equal(loadConfig({}, { APPSTACK_STATE_DIR: stateDir }).sharding, false);
  const postgres = { APPSTACK_STATE_DIR: stateDir, APPSTACK_BACKEND_URL: "postgres://appstack:secret@db:5432/appstack", APPSTACK_PASSPHRASE: "p" };
  assert.equal(loadConfig({}, { ...postgres, APPSTACK_SHARDING: "true" }).sharding, true);
  assert.equal(loadConfig(flags(["--sharding=true"]), postgres).sharding, true);
  assert.throws(() => loadConfig({}, { ...postgres, APPSTACK_SHARDING: "true", APPSTACK_LEADER_ELECT: "false" }), /sharding needs leader election/);
});

test("the operator refuses to start sharded on any backend but PostgreSQL, wherever the URL came from, naming its scheme only", () => {
  const given = { APPSTACK_STATE_DIR: stateDir, APPSTACK_PASSPHRASE: "p", APPSTACK_SHARDING: "true" };
  // The default file backend, a file:// URL (an install's backendSecret the install never reads), an object store.
  assert.throws(() => loadConfig({}, given), /sharding .* needs a PostgreSQL backend .*not file:\/\/: replicas share no folder/);
  assert.throws(() => loadConfig({}, { ...given, APPSTACK_BACKEND_URL: `file://${stateDir}/shared` }), /not file:\/\//);
  assert.throws(() => loadConfig(flags(["--backend-url=s3://bucket?key=SECRETKEY"]), given), (error: unknown) => /not s3:\/\/: .*stack lock/.test(String(error)) && !String(error).includes("SECRETKEY"));
  assert.equal(loadConfig({}, { ...given, APPSTACK_BACKEND_URL: "postgresql://db/appstack" }).sharding, true);
});

test("watching all namespaces, kube-system and the operator's own are excluded unless set; a list of namespaces to watch excludes none", () => {
  const env = { APPSTACK_STATE_DIR: stateDir };
  assert.deepEqual(loadConfig({}, env).excludedNamespaces, ["kube-system"]);
  assert.deepEqual(loadConfig({}, { ...env, POD_NAME: "appstack-0", POD_NAMESPACE: "appstack-system" }).excludedNamespaces, ["kube-system", "appstack-system"]);
  assert.deepEqual(loadConfig(flags(["--excluded-namespaces=kube-system, platform"]), env).excludedNamespaces, ["kube-system", "platform"]);
  assert.deepEqual(loadConfig({}, { ...env, APPSTACK_EXCLUDED_NAMESPACES: "" }).excludedNamespaces, []);
  assert.deepEqual(loadConfig({}, { ...env, APPSTACK_NAMESPACES: "team-a" }).excludedNamespaces, []);
});
