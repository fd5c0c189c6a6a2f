import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { endingOf, isOurs, isRunning, startComponent, stopComponents } from "../../toolchain/cluster/process.ts";
import { waitUntil } from "../../toolchain/cluster/readiness.ts";

const dir = mkdtempSync(join(tmpdir(), "appstack-component-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("a component this process started runs until its exit event, whatever /proc/<pid>/cmdline reads meanwhile", async () => {
  // A marker its command line does not hold stands for the moment right after spawn, when the
  // kernel has not yet set the new program's arguments and the command line reads empty.
  const component = startComponent("sleeper", "sleep", ["30"], join(dir, "sleeper.log"), { detached: false });
  assert.equal(isOurs(component.pid, "not-in-its-command-line"), false);
  assert.equal(isRunning(component, "not-in-its-command-line"), true);
  await stopComponents([component], "not-in-its-command-line", 5_000);
  assert.equal(isRunning(component, "not-in-its-command-line"), false);
  assert.equal(endingOf(component), "killed by SIGTERM");
});

test("a component found in a state file (not started here) is judged by its command line", () => {
  const elsewhere = { name: "other", pid: process.pid, logFile: join(dir, "other.log"), binary: "node", args: [] };
  assert.equal(isRunning(elsewhere, "not-in-its-command-line"), false);
  assert.equal(isRunning(elsewhere, ""), true);
});

test("a component that exits while waited for is reported with how it ended and an empty log said so", async () => {
  const component = startComponent("quitter", "sh", ["-c", "exit 3"], join(dir, "quitter.log"), { detached: false });
  await assert.rejects(waitUntil("something it never does", component, dir, async () => false), /quitter \(pid \d+\) exited \(exit code 3\) while waiting for something it never does:\n\(its log is empty\)/);
});
