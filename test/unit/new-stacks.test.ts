// New stacks of the file backend made from a template instead of `pulumi stack init`: the pinned
// CLI must take them for stacks it made itself (select, list, up with a secret, outputs, destroy
// and remove). No cluster: the program only exports outputs. Fails when a Pulumi upgrade changes
// what a new stack's files look like. Stacks made before the key service, with the passphrase
// provider, keep working beside them.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import * as pulumi from "@pulumi/pulumi";
import { engineFolders } from "../../operator/manager/config.ts";
import { createLogger } from "../../operator/base/log.ts";
import { secretsProviderUrl } from "../../operator/pulumi/key-service.ts";
import { loadTemplate, stackSettingsFile } from "../../operator/pulumi/new-stacks.ts";
import { projectName } from "../../operator/pulumi/stack-names.ts";
import { prepareWorkDir } from "../../operator/pulumi/stack-selection.ts";
import { StackDriver } from "../../operator/pulumi/stacks.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";
import { engineBinaries, repoRoot } from "../../toolchain/tools.ts";

const dir = mkdtempSync(join(tmpdir(), "appstack-new-stacks-"));
after(() => rmSync(dir, { recursive: true, force: true }));
mkdirSync(join(dir, "backend"));
const backendUrl = pathToFileURL(join(dir, "backend")).href;
// The operator's layout of a state folder, so that `appstack stacks` finds it.
const folders = engineFolders(dir);
const io = new StateIo(60_000);
const workDir = await prepareWorkDir(folders.workDir, io);
const settings = { backendUrl, pulumiHome: folders.pulumiHome, passphrase: "new-stacks-test", binaries: engineBinaries(), workDir };
const driver = new StackDriver(settings, createLogger({ level: "warn", write: () => undefined }));
const secretValue = "the-secret-value-4711";
const program = () => Promise.resolve({ greeting: "hello", secret: pulumi.secret(secretValue) });
const checkpoint = (stack: string) => join(dir, "backend", ".pulumi", "stacks", projectName, `${stack}.json`);

/** The Pulumi home of the person who runs `appstack stacks`: theirs, not the engines'. */
const personsHome = join(dir, "persons-pulumi-home");

/** The pinned CLI as a person runs it on the operator's state: `appstack stacks`, which brings the key service. */
async function cli(...args: string[]): Promise<string> {
  const env = { ...process.env, APPSTACK_STATE_DIR: dir, APPSTACK_PASSPHRASE: settings.passphrase, APPSTACK_BACKEND_URL: "", PULUMI_CONFIG_PASSPHRASE: "", PULUMI_HOME: personsHome };
  return (await promisify(execFile)(process.execPath, [join(repoRoot, "operator", "cmd", "cli.ts"), "stacks", ...args, "--non-interactive"], { encoding: "utf8", env })).stdout;
}

test("a stack made with the passphrase provider, before the key service, keeps working, and its template is not used", async () => {
  await cli("stack", "init", "older", "--secrets-provider", "passphrase");
  assert.match(readFileSync(stackSettingsFile(workDir, "older"), "utf8"), /^encryptionsalt: v1:/);
  // What an earlier appstack kept as its template: a passphrase stack's files.
  writeFileSync(join(workDir, "new-stack-template.json"), JSON.stringify({ checkpoint: readFileSync(checkpoint("older"), "utf8"), settings: readFileSync(stackSettingsFile(workDir, "older"), "utf8") }));
  assert.equal(await loadTemplate(workDir, secretsProviderUrl, io), undefined);
  await driver.up("older", program, { refresh: false });
  assert.deepEqual(JSON.parse(await cli("stack", "output", "--json", "--show-secrets", "--stack", "older")), { greeting: "hello", secret: secretValue });
  await driver.destroy("older");
});

test("a stack made from the template is one the pinned CLI takes for its own", async () => {
  await driver.up("first", program, { refresh: false });
  const template = await loadTemplate(workDir, secretsProviderUrl, io);
  assert.ok(template, "the first new stack, made by `stack init`, left the template");
  assert.match(template.settings, /^secretsprovider: hashivault:\/\/appstack\nencryptedkey: /);

  await driver.up("second", program, { refresh: false });
  // `stack init` would have drawn a salt of its own: the same settings prove the template made it.
  assert.equal(readFileSync(stackSettingsFile(workDir, "second"), "utf8"), template.settings);
  assert.equal((JSON.parse(readFileSync(checkpoint("second"), "utf8")) as { checkpoint: { stack: string } }).checkpoint.stack, `organization/${projectName}/second`);
  assert.ok(!readFileSync(checkpoint("second"), "utf8").includes(secretValue), "the secret is stored encrypted");

  const listed = (JSON.parse(await cli("stack", "ls", "--json")) as { name: string }[]).map((s) => s.name).sort();
  assert.deepEqual(listed, ["first", "second"]);
  await cli("stack", "select", "second");
  assert.deepEqual(JSON.parse(await cli("stack", "output", "--json", "--show-secrets", "--stack", "second")), { greeting: "hello", secret: secretValue });

  // A second operation on it, and its removal, as on any stack.
  await driver.up("second", () => Promise.resolve({ greeting: "again", secret: pulumi.secret(secretValue) }), { refresh: false });
  assert.equal((JSON.parse(await cli("stack", "output", "--json", "--stack", "second")) as { greeting: string }).greeting, "again");
  await driver.destroy("second");
  assert.ok(!existsSync(checkpoint("second")));
  assert.ok(!existsSync(stackSettingsFile(workDir, "second")), "`stack rm` removed its settings file");
  assert.equal(await driver.exists("second"), false);
  assert.deepEqual((JSON.parse(await cli("stack", "ls", "--json")) as { name: string }[]).map((s) => s.name), ["first"]);
});

test("a warm-up makes the template ahead of the first new stack, and leaves no stack behind", async () => {
  const fresh = join(dir, "fresh");
  mkdirSync(join(fresh, "backend"), { recursive: true });
  const freshBackend = pathToFileURL(join(fresh, "backend")).href;
  const freshWorkDir = await prepareWorkDir(join(fresh, "workspace"), io);
  const warmed = new StackDriver({ ...settings, backendUrl: freshBackend, workDir: freshWorkDir }, createLogger({ level: "warn", write: () => undefined }));
  await warmed.warmUp();
  const template = await loadTemplate(freshWorkDir, secretsProviderUrl, io);
  assert.ok(template, "the warm-up left the template");
  // `stack rm` keeps a backup (`.bak`) of what it removes, as for every removed stack.
  const stacksLeft = readdirSync(join(fresh, "backend", ".pulumi", "stacks", projectName)).filter((file) => !file.includes(".bak"));
  assert.deepEqual(stacksLeft, [], "its own stack is removed again");
  await warmed.warmUp(); // a second start: the template is there, nothing to do
  assert.deepEqual(await loadTemplate(freshWorkDir, secretsProviderUrl, io), template);
  await warmed.up("first", program, { refresh: false });
  assert.equal(readFileSync(stackSettingsFile(freshWorkDir, "first"), "utf8"), template.settings, "the first new stack is made from it");
  await warmed.destroy("first");
});

test("`appstack stacks` runs the CLI in the engines' home (their plugins, no logs), not in the person's own", async () => {
  await cli("stack", "ls");
  assert.equal(existsSync(personsHome), false, "the CLI wrote into the person's own Pulumi home");
});
