// What a dead run leaves on the machine must not stop the next cluster from starting: a `cluster up`
// cluster whose processes were all killed is reaped, and a real node's bridge whose cluster folder is
// gone (it holds the Service range's route) is deleted when the next real node makes its network.
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { cgroupTree, subfolders } from "../../toolchain/cluster/node-cleanup.ts";
import { repoRoot } from "../../toolchain/tools.ts";

const scratch = mkdtempSync(join(tmpdir(), "appstack-leftovers-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** A cluster folder as `cluster up` leaves it (no owner), its one component the process `pid`. */
function detachedClusterAt(root: string, name: string, pid: number): string {
  const dir = join(root, `appstack-cluster-${name}`);
  mkdirSync(dir, { recursive: true });
  const component = { name: "etcd", pid, logFile: join(dir, "etcd.log"), binary: "/bin/sh", args: [] };
  writeFileSync(join(dir, "state.json"), JSON.stringify({ name, dir, server: "https://127.0.0.1:1", kubeconfig: join(dir, "kubeconfig"), ownerPid: null, components: [component] }));
  return dir;
}

/** reapAbandonedClusters in a child whose temporary folder is `root`. */
function reapUnder(root: string): void {
  const script = `import { reapAbandonedClusters } from ${JSON.stringify(join(repoRoot, "toolchain/cluster/cluster.ts"))}; await reapAbandonedClusters();`;
  const result = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: repoRoot, env: { ...process.env, TMPDIR: root }, encoding: "utf8", timeout: 60_000 });
  assert.equal(result.status, 0, result.stderr);
}

test("a `cluster up` cluster whose processes are all gone is reaped; one whose process runs is left alone", async () => {
  const root = mkdtempSync(join(scratch, "tmp-"));
  const exited = spawn("true");
  await once(exited, "exit");
  const dead = detachedClusterAt(root, "dead", exited.pid!);
  const liveDir = join(root, "appstack-cluster-live");
  // Its command line names the cluster's folder, as every component's does.
  const live = spawn("sh", ["-c", "sleep 600", liveDir], { stdio: "ignore" });
  after(() => live.kill("SIGKILL"));
  detachedClusterAt(root, "live", live.pid!);

  reapUnder(root);

  assert.equal(existsSync(dead), false, "the dead cluster's folder is removed");
  assert.equal(existsSync(join(liveDir, "state.json")), true, "the running cluster is kept");
  assert.equal(live.exitCode, null, "and its process still runs");
});

const root = process.getuid?.() === 0;
const unshare = spawnSync("unshare", ["--net", "true"]).status === 0;

test("a leftover bridge of ours holding the Service range's route does not stop the next real node's network", { skip: root && unshare ? false : "needs root and unshare (a network namespace of the test's own)" }, () => {
  const network = join(repoRoot, "toolchain/cluster/node-network.ts");
  // All of it in a network namespace of its own: the machine's links and routes are never touched.
  const script = [
    `import { execFileSync } from "node:child_process";`,
    `import { createNodeNetwork, deleteNodeNetwork } from ${JSON.stringify(network)};`,
    `const ip = (...args) => execFileSync("ip", args, { encoding: "utf8" });`,
    `ip("link", "add", "apst00000000", "type", "bridge"); ip("link", "set", "apst00000000", "up");`,
    `ip("route", "add", "10.96.0.0/16", "dev", "apst00000000");`,
    `const made = createNodeNetwork("leftovers", "10.96.0.0/16");`,
    `console.log(JSON.stringify({ made, links: ip("-o", "link", "show", "type", "bridge"), routes: ip("route") }));`,
    `deleteNodeNetwork(made);`,
    `console.log(JSON.stringify({ after: ip("-o", "link", "show", "type", "bridge") }));`,
  ].join("\n");
  const output = execFileSync("unshare", ["--net", "--", process.execPath, "--import", "tsx", "--input-type=module", "-e", script], { cwd: repoRoot, encoding: "utf8", timeout: 60_000 });
  const [first, second] = output.trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
  const { made, links, routes } = first as { made: { bridge: string }; links: string; routes: string };
  assert.doesNotMatch(links, /apst00000000/, "the leftover bridge is gone");
  assert.match(links, new RegExp(made.bridge), "the new bridge is made");
  assert.match(routes, new RegExp(`10\\.96\\.0\\.0/16 dev ${made.bridge}`), "the Service range is routed to the new bridge");
  assert.doesNotMatch(String(second?.after), /apst/, "stop deletes the new bridge");
});

test("a node's cgroup tree walked while containerd removes a container's cgroup: the one gone is left out, no error", () => {
  const root = join(scratch, "cgroups");
  mkdirSync(join(root, "kubepods", "pod-a", "container-1"), { recursive: true });
  mkdirSync(join(root, "kubepods", "pod-b"), { recursive: true });
  // The folder is listed by its parent, then removed before it is read itself.
  const racing = (path: string) => {
    if (path.endsWith("container-1")) rmSync(path, { recursive: true });
    return subfolders(path);
  };
  assert.deepEqual(cgroupTree(root, racing).map((path) => path.slice(root.length)).sort(), ["", "/kubepods", "/kubepods/pod-a", "/kubepods/pod-b"]);
  assert.deepEqual(cgroupTree(join(root, "gone")), []);
});
