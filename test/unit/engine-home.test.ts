// The engine's home as appstack prepares it: Pulumi's automatic per-command logs are off, and the
// pinned CLI still runs. Fails when a Pulumi upgrade writes them anyway, or refuses to run
// without its logs folder.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { pulumiCommand, turnOffAutomaticLogs, withoutLegacyScan } from "../../operator/pulumi/engine.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";
import { engineBinaries, toolPath } from "../../toolchain/tools.ts";

const dir = mkdtempSync(join(tmpdir(), "appstack-engine-home-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const io = new StateIo(60_000);

async function pulumi(home: string, ...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return pulumiWith({}, home, ...args);
}

async function pulumiWith(extraEnv: Record<string, string>, home: string, ...args: string[]): Promise<{ stdout: string; stderr: string }> {
  const env = { ...process.env, PULUMI_HOME: home, PULUMI_SKIP_UPDATE_CHECK: "true", PULUMI_CONFIG_PASSPHRASE: "home-test", ...extraEnv };
  return promisify(execFile)(toolPath("pulumi"), [...args, "--non-interactive"], { cwd: join(dir, "project"), encoding: "utf8", env });
}

const logFiles = (home: string): string[] => readdirSync(home, { recursive: true, encoding: "utf8" }).filter((path) => path.endsWith(".log"));

test("the pinned CLI writes no automatic logs into an engine home appstack prepared, and runs as before", async () => {
  mkdirSync(join(dir, "project", "state"), { recursive: true });
  writeFileSync(join(dir, "project", "Pulumi.yaml"), `name: home\nruntime: nodejs\nbackend:\n  url: ${pathToFileURL(join(dir, "project", "state")).href}\n`);

  // Left alone, every command writes one: what this test would miss if the CLI stopped by itself.
  const plain = join(dir, "plain-home");
  await pulumi(plain, "stack", "ls");
  assert.ok(logFiles(plain).length > 0, "a home left alone gets a log per command");

  // A home with the logs of an earlier appstack, as an operator upgraded in place has.
  const home = join(dir, "home");
  mkdirSync(join(home, "logs"), { recursive: true });
  writeFileSync(join(home, "logs", "pulumi-20261122T000000-1-up.log"), "old");
  await turnOffAutomaticLogs(home, io);
  assert.ok(statSync(join(home, "logs")).isFile());
  await turnOffAutomaticLogs(home, io); // again, as before every operation: nothing changes

  await pulumi(home, "stack", "init", "s", "--secrets-provider", "passphrase");
  await pulumi(home, "config", "set", "--secret", "x", "y", "--stack", "s");
  const listed = await pulumi(home, "stack", "ls", "--json");
  assert.deepEqual((JSON.parse(listed.stdout) as { name: string }[]).map((s) => s.name), ["s"]);
  assert.equal(listed.stderr, "", "no complaint about the missing logs folder");
  assert.deepEqual(logFiles(home), []);
  assert.ok(statSync(join(home, "logs")).isFile());
});

// The Automation API's own check of the CLI runs `pulumi version` with this process's environment:
// left alone, it writes a log into the Pulumi home of whoever runs appstack (their ~/.pulumi).
test("the CLI's version check writes into the engines' home, not into this process's own Pulumi home", async () => {
  const own = join(dir, "own-home");
  process.env["PULUMI_HOME"] = own;
  const engines = join(dir, "engines-home");
  const command = await pulumiCommand(engines, io, engineBinaries().cliRoot);
  assert.ok(command.version, "the check read the CLI's version");
  assert.equal(existsSync(own), false, "the check wrote into this process's own Pulumi home");
  assert.equal(process.env["PULUMI_HOME"], own, "this process's environment is left as it was");
  assert.deepEqual(logFiles(engines), []);
});

test("with the engines' environment, the CLI no longer lists the whole stacks folder at its start for stack files of the old layout", async () => {
  const home = join(dir, "scan-home");
  await turnOffAutomaticLogs(home, io);
  // The project's backend (project-scoped, as appstack's) with one stack file of the old, unscoped layout beside.
  const stacks = join(dir, "project", "state", ".pulumi", "stacks");
  await pulumi(home, "stack", "init", "scanned", "--secrets-provider", "passphrase");
  copyFileSync(join(stacks, "home", "scanned.json"), join(stacks, "unscoped.json"));
  try {
    // The scan's one visible effect is its warning: seen without the setting, gone with it.
    assert.match((await pulumi(home, "stack", "ls")).stderr, /Found legacy stack files/);
    assert.doesNotMatch((await pulumiWith(withoutLegacyScan, home, "stack", "ls")).stderr, /legacy/);
  } finally {
    rmSync(join(stacks, "unscoped.json"));
  }
});
