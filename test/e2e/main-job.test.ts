// The main job as a user runs it: `npm start -- --samples` (here `appstack run --samples`), stopped
// with Ctrl-C, then started again. Each run has a new local cluster; the second must not trip over
// state the first one left.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { repoRoot } from "../../toolchain/tools.ts";
import { eventually } from "../helpers/cluster.ts";
import { Workloads } from "../helpers/operator.ts";

// The default state folder of a user who names none: shared by both runs, as ~/.local/state would be.
const home = mkdtempSync(join(tmpdir(), "appstack-main-job-"));
after(() => rmSync(home, { recursive: true, force: true }));

async function runOnce(): Promise<void> {
  const env: Record<string, string | undefined> = { ...process.env, XDG_STATE_HOME: home, APPSTACK_HEALTH_ADDR: "127.0.0.1:0", APPSTACK_LOG_FORMAT: "json" };
  delete env["KUBECONFIG"];
  delete env["APPSTACK_STATE_DIR"];
  const child = spawn(process.execPath, ["--import", "tsx", join(repoRoot, "operator/cmd/cli.ts"), "run", "--samples"], { cwd: repoRoot, env, stdio: ["ignore", "ignore", "pipe"] });
  let output = "";
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  try {
    const kubeconfig = await eventually("the local cluster", async () => /export KUBECONFIG=(\S+)/.exec(output)?.[1], 120_000);
    const workloads = new Workloads(kubeconfig);
    const hello = await workloads.ready("App", "default", "hello");
    const cache = await workloads.ready("Memcached", "default", "cache");
    assert.equal(hello.status?.readyReplicas, 2);
    assert.equal(cache.status?.readyReplicas, 3);
  } catch (error) {
    console.error(output.split("\n").slice(-40).join("\n"));
    throw error;
  } finally {
    child.kill("SIGINT");
    assert.equal(await exited, 0, output.split("\n").slice(-20).join("\n"));
  }
  assert.match(output, /local cluster stopped and removed/);
}

test("the main job with --samples, run twice in a row: both samples Ready both times", async () => {
  await runOnce();
  await runOnce();
});
