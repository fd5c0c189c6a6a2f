// The options reference (docs/configuration.md) is generated from the code, and the code's
// definitions agree with each other: the operator's settings list (operator/manager/settings.ts)
// against the flags it parses (operatorOptions), the variables loadConfig reads and the defaults
// it gives, and against what the install (components/install.ts, Pulumi.yaml) sets. Each test
// fails when an option is added in the code without its row, or the page is edited by hand.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot } from "../../toolchain/tools.ts";
import { loadConfig, operatorOptions } from "../../operator/manager/config.ts";
import { operatorSettings } from "../../operator/manager/settings.ts";
import { installOptions, optionsReference, pageReference, referencePage } from "../../operator/cmd/options-reference.ts";
import { manifestsOptions } from "../../operator/cmd/manifests-cli.ts";

const source = (path: string) => readFileSync(join(repoRoot, path), "utf8");
const settingsEnv = new Set(operatorSettings.flatMap((setting) => setting.env));

test(`${referencePage}'s options table is the one generated from the code`, () => {
  const page = pageReference(source(referencePage));
  assert.ok(page !== undefined, `${referencePage} has the generated block's markers`);
  assert.equal(page, optionsReference(), "regenerate it: node --import tsx operator/cmd/options-reference.ts --write");
});

test("every operator flag has its row, and every row's flag is one the operator parses", () => {
  const flags = operatorSettings.flatMap((setting) => (setting.flag ? [setting.flag] : [])).sort();
  assert.deepEqual(flags, Object.keys(operatorOptions).sort());
});

test("every variable loadConfig reads has its row, and every row's variable is read by the operator", () => {
  const config = source("operator/manager/config.ts");
  const read = new Set([...config.matchAll(/env\["([A-Z_]+)"\]/g), ...config.matchAll(/setting\("[a-z-]+", "([A-Z_]+)"\)/g)].map((match) => match[1]!));
  read.delete("XDG_STATE_HOME"); // the base of the state folder's default, in that row's default
  assert.deepEqual([...read].filter((name) => !settingsEnv.has(name)), [], "variables read with no row");
  const operatorSources = (folder: string): string[] =>
    readdirSync(join(repoRoot, folder), { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? operatorSources(`${folder}/${entry.name}`) : entry.name.endsWith(".ts") ? [source(`${folder}/${entry.name}`)] : [],
    );
  const all = operatorSources("operator").join("\n");
  assert.deepEqual([...settingsEnv].filter((name) => !all.includes(`"${name}"`)), [], "rows whose variable nothing reads");
});

test("every variable the install sets has its row, and every row's install option exists and sets it", () => {
  const install = source("components/install.ts");
  const set = new Set([...install.matchAll(/\{ name: "([A-Z_]+)", value/g)].map((match) => match[1]!));
  assert.ok(set.size > 10, "the scan reads the install's env list");
  assert.deepEqual([...set].filter((name) => !settingsEnv.has(name)), [], "variables the install sets with no row");
  const options = installOptions();
  for (const setting of operatorSettings.filter((s) => s.install)) {
    assert.ok(options.has(setting.install!), `${setting.env[0]}: appstack:${setting.install} is no install option`);
    assert.ok(setting.env.some((name) => set.has(name)), `${setting.env[0]}: the install does not set it`);
  }
  for (const key of Object.values(manifestsOptions)) assert.ok(options.has(key), `appstack manifests --${key}: no install option appstack:${key}`);
});

test("the defaults the rows state are loadConfig's", () => {
  const scratch = mkdtempSync(join(tmpdir(), "appstack-options-"));
  try {
    const config = loadConfig({}, { APPSTACK_STATE_DIR: scratch });
    const stated = (name: string) => operatorSettings.find((setting) => setting.env[0] === name)!.default;
    const expected: [string, string][] = [
      ["APPSTACK_SHUTDOWN_GRACE_SECONDS", String(config.shutdownGraceMs / 1000)],
      ["APPSTACK_WATCH_TIMEOUT_SECONDS", String(config.watchTimeoutMs / 1000)],
      ["APPSTACK_CACHE_SYNC_TIMEOUT_SECONDS", String(config.cacheSyncTimeoutMs / 1000)],
      ["APPSTACK_OPERATION_TIMEOUT_SECONDS", String(config.operationTimeoutMs / 1000)],
      ["APPSTACK_HISTORY_LIMIT", String(config.historyLimit)],
      ["APPSTACK_RESYNC_SECONDS", String(config.resyncMs / 1000)],
      ["APPSTACK_POD_START_TIMEOUT_SECONDS", String(config.podStartTimeoutMs / 1000)],
      ["APPSTACK_RETRY_BASE_MS", String(config.baseRetryMs)],
      ["APPSTACK_RETRY_MAX_MS", String(config.maxRetryMs)],
      ["APPSTACK_LOG_LEVEL", `\`${config.logLevel}\``],
      ["APPSTACK_OBJECT_METRICS", `\`${config.objectMetrics}\``],
      ["APPSTACK_ATTACHED_PROVIDERS", `\`${config.attachedProviders}\``],
      ["APPSTACK_LEADER_ELECT", `\`${config.leaderElection !== undefined}\``],
      ["APPSTACK_LEASE_NAME", `\`${config.leaderElection?.name}\``],
    ];
    for (const [name, value] of expected) assert.equal(stated(name), value, name);
    assert.ok(stated("APPSTACK_HEALTH_ADDR").startsWith(`\`${config.healthHost}:${config.healthPort}\``));
    assert.equal(config.sharding, false);
    assert.ok(stated("APPSTACK_SHARDING").startsWith("`false`"));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});
