// Stale stack locks in a file backend laid out as Pulumi lays it out: which are broken, which stay.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { createLogger } from "../../operator/manager/log.ts";
import { breakAllStaleLocks, breakStaleLocks } from "../../operator/pulumi/stack-locks.ts";

const backend = mkdtempSync(join(tmpdir(), "appstack-locks-"));
after(() => rmSync(backend, { recursive: true, force: true }));
const backendUrl = pathToFileURL(backend).href;
const warnings: string[] = [];
const log = createLogger({ level: "warn", write: (line) => warnings.push(line) });

/** A pid no process has: beyond the kernel's default pid_max. */
const deadPid = 4_194_304 + 1;

function lock(project: string, stack: string, holder: { pid: number; hostname: string }, taken = new Date()): string {
  const folder = join(backend, ".pulumi", "locks", "organization", project, stack);
  mkdirSync(folder, { recursive: true });
  const file = join(folder, `${stack}-lock.json`);
  writeFileSync(file, JSON.stringify({ ...holder, username: "test", timestamp: taken.toISOString() }));
  writeFileSync(`${file}.attrs`, "{}");
  return file;
}

test("a sweep breaks the project's locks whose holder is gone, and keeps live ones and other projects'", () => {
  const dead = lock("appstack", "app.default.killed", { pid: deadPid, hostname: hostname() });
  const foreign = lock("appstack", "app.default.moved", { pid: process.pid, hostname: "an-old-pod" });
  const live = lock("appstack", "app.default.running", { pid: process.pid, hostname: hostname() });
  const other = lock("someone-else", "app.default.killed", { pid: deadPid, hostname: hostname() });

  assert.equal(breakAllStaleLocks(backendUrl, "appstack", log), 2);
  assert.ok(!existsSync(dead) && !existsSync(`${dead}.attrs`), "a dead holder's lock is broken");
  assert.ok(!existsSync(foreign), "another host's lock is broken: only the leader runs operations");
  assert.ok(existsSync(live) && existsSync(`${live}.attrs`), "a live holder's lock stays");
  assert.ok(existsSync(other), "another project's lock stays");
  assert.equal(warnings.length, 2, "one warning per broken lock, none for its attributes file");

  assert.equal(breakStaleLocks(backendUrl, "appstack", "app.default.running", log), false);
  assert.equal(breakAllStaleLocks(backendUrl, "appstack", log), 0, "a second sweep finds nothing");
  assert.equal(breakAllStaleLocks("s3://bucket", "appstack", log), 0, "only file backends have lock files to look at");
});

test("a lock whose pid now belongs to a process started after the lock was taken is stale (pids wrap)", () => {
  // This test process is alive, but started long after a lock taken a day ago.
  const reused = lock("appstack", "app.default.reused", { pid: process.pid, hostname: hostname() }, new Date(Date.now() - 86_400_000));
  assert.equal(breakStaleLocks(backendUrl, "appstack", "app.default.reused", log), true);
  assert.ok(!existsSync(reused));
});
