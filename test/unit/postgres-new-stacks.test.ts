// New stacks on Pulumi's postgres:// backend made from the template, as on files (new-stacks.test.ts):
// the first new stack is made by `stack init` and leaves the template; every later one is a row the
// operator inserts, which the pinned CLI takes for a stack it made itself. No cluster: the program
// only exports outputs. A real PostgreSQL server (toolchain/cluster/postgres.ts).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import * as pulumi from "@pulumi/pulumi";
import { createLogger } from "../../operator/base/log.ts";
import { engineFolders } from "../../operator/manager/config.ts";
import { secretsProviderUrl } from "../../operator/pulumi/key-service.ts";
import { loadTemplate, stackSettingsFile } from "../../operator/pulumi/new-stacks.ts";
import { closePostgresPools } from "../../operator/pulumi/postgres-store.ts";
import { projectName } from "../../operator/pulumi/stack-names.ts";
import { prepareWorkDir } from "../../operator/pulumi/stack-selection.ts";
import { StackDriver } from "../../operator/pulumi/stacks.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";
import { startPostgres, type PostgresServer } from "../../toolchain/cluster/postgres.ts";
import { engineBinaries, repoRoot } from "../../toolchain/tools.ts";

const dir = mkdtempSync(join(tmpdir(), "appstack-pg-new-stacks-"));
/** The server's own folder, which it opens to the user it runs as. */
const serverDir = mkdtempSync(join(tmpdir(), "appstack-pg-new-stacks-server-"));
let server: PostgresServer | undefined;
const io = new StateIo(60_000);
const passphrase = "pg-new-stacks-test";
const secretValue = "the-secret-value-0815";
const program = () => Promise.resolve({ greeting: "hello", secret: pulumi.secret(secretValue) });
const quiet = createLogger({ level: "warn", write: () => undefined });

before(async () => {
  server = await startPostgres({ dir: serverDir });
});
after(async () => {
  await closePostgresPools();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
  rmSync(serverDir, { recursive: true, force: true });
});

/** A replica's state folder on the shared backend: its own work folder, engines' home and template. */
async function replica(name: string) {
  const folders = engineFolders(join(dir, name));
  const workDir = await prepareWorkDir(folders.workDir, io);
  const settings = { backendUrl: server!.url, pulumiHome: folders.pulumiHome, passphrase, binaries: engineBinaries(), workDir };
  return { stateDir: join(dir, name), workDir, driver: new StackDriver(settings, quiet) };
}

/** The stacks' checkpoint rows (Pulumi prefixes keys with the database's name). */
async function stackRows(): Promise<string[]> {
  const rows = await server!.query<{ key: string }>("SELECT key FROM pulumi_state WHERE key LIKE $1 ORDER BY key", [`%/.pulumi/stacks/${projectName}/%.json`]);
  return rows.map((row) => row.key.replace(/^.*\//, "").replace(/\.json$/, ""));
}

/** The pinned CLI as a person runs it on a replica's state: `appstack stacks`, which brings the key service. */
async function cli(stateDir: string, ...args: string[]): Promise<string> {
  const env = { ...process.env, APPSTACK_STATE_DIR: stateDir, APPSTACK_PASSPHRASE: passphrase, APPSTACK_BACKEND_URL: server!.url, PULUMI_CONFIG_PASSPHRASE: "", PULUMI_HOME: join(dir, "persons-pulumi-home") };
  return (await promisify(execFile)(process.execPath, [join(repoRoot, "operator", "cmd", "cli.ts"), "stacks", ...args, "--non-interactive"], { encoding: "utf8", env })).stdout;
}

test("on postgres, a new stack after the first is a row made from the template, and the pinned CLI takes it for its own", async () => {
  const a = await replica("replica-a");
  await a.driver.up("first", program, { refresh: false });
  const template = await loadTemplate(a.workDir, secretsProviderUrl, io);
  assert.ok(template, "the first new stack, made by `stack init`, left the template");

  await a.driver.up("second", program, { refresh: false });
  // `stack init` would have wrapped a data key of its own: the same settings prove the template made it.
  assert.equal(readFileSync(stackSettingsFile(a.workDir, "second"), "utf8"), template.settings);
  assert.deepEqual(await stackRows(), ["first", "second"]);
  assert.deepEqual(JSON.parse(await cli(a.stateDir, "stack", "output", "--json", "--show-secrets", "--stack", "second")), { greeting: "hello", secret: secretValue });

  // Another replica on the same backend (an object moved to it) finds the row and uses the stack as it is.
  const b = await replica("replica-b");
  await b.driver.up("second", () => Promise.resolve({ greeting: "again", secret: pulumi.secret(secretValue) }), { refresh: false });
  assert.equal((JSON.parse(await cli(b.stateDir, "stack", "output", "--json", "--stack", "second")) as { greeting: string }).greeting, "again");
  await b.driver.destroy("second");
  assert.equal(await b.driver.exists("second"), false);
  assert.deepEqual(await stackRows(), ["first"]);
  await a.driver.destroy("first");
});

test("on postgres, a warm-up makes the template ahead of the first new stack and leaves no stack behind", async () => {
  const c = await replica("replica-c");
  await c.driver.warmUp();
  const template = await loadTemplate(c.workDir, secretsProviderUrl, io);
  assert.ok(template, "the warm-up left the template");
  assert.deepEqual(await stackRows(), [], "its own stack is removed again");
  await c.driver.up("third", program, { refresh: false });
  assert.equal(readFileSync(stackSettingsFile(c.workDir, "third"), "utf8"), template.settings, "the first new stack is made from it");
  assert.deepEqual(await stackRows(), ["third"]);
  await c.driver.destroy("third");
});
