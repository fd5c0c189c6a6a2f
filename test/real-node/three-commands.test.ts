// The README's three commands, run as they stand there (read from the README itself), on a cluster
// of this file's own (APPSTACK_CLUSTER_NAME, which the commands read as kind reads
// KIND_CLUSTER_NAME): a real-node cluster, the images loaded into it, the rendered install applied
// and the samples. What counts is read back from the API server: the operator as a pod on the node,
// the samples Ready with their pods, and a pod's answers from both samples by their DNS names.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { clusterDir, readState, stopClusterAt } from "../../toolchain/cluster/cluster.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { repoRoot } from "../../toolchain/tools.ts";
import { processesMentioning } from "../helpers/proctree.ts";
import { realNodeSkip } from "../helpers/real-node-gate.ts";

const skip = realNodeSkip("images and node");
const clusterName = `readme-${process.pid}`;
const commandTimeoutMs = 1_200_000;

after(async () => {
  if (skip === false) await stopClusterAt(clusterDir(clusterName));
});

/** The shell block under the README's heading "The operator as a pod: three commands", line by line. */
function readmeCommands(readme: string): string[] {
  const section = readme.split(/^## /m).find((part) => part.startsWith("The operator as a pod: three commands"));
  assert.ok(section, "the README has the section");
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, "the section has a sh block");
  return block.split("\n").filter((line) => line.trim() && !line.trim().startsWith("#"));
}

/** One README line through bash, in the repository, on this file's cluster; its exit code and output. */
function run(line: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", line], { cwd: repoRoot, env: { ...process.env, APPSTACK_CLUSTER_NAME: clusterName }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGTERM"), commandTimeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

const readyOf = (object: { metadata?: { generation?: number }; status?: { observedGeneration?: number; conditions?: { type: string; status: string; observedGeneration?: number }[] } }) =>
  object.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True" && c.observedGeneration === object.metadata?.generation) === true &&
  object.status.observedGeneration === object.metadata?.generation;

test("the README's three commands, as written there, give the operator as a pod on the real node and samples that serve by name", { skip, timeout: 3 * commandTimeoutMs }, async () => {
  const commands = readmeCommands(readFileSync(join(repoRoot, "README.md"), "utf8"));
  assert.equal(commands.length, 3, commands.join("\n"));
  const outputs: string[] = [];
  for (const line of commands) {
    const started = Date.now();
    const { code, output } = await run(line);
    console.error(`${line.split("#")[0]!.trim()}: exit ${code} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    assert.equal(code, 0, `${line}\n${output.slice(-4000)}`);
    outputs.push(output);
  }
  // What the last command heard from a pod, through the cluster DNS.
  assert.match(outputs[2]!, /http:\/\/hello\.default\.svc\/ answers: <title>Welcome to nginx!<\/title>/);
  assert.match(outputs[2]!, /cache\.default\.svc:11211 answers stats: STAT version 1\.6\.\d+/);

  const state = readState(clusterDir(clusterName));
  assert.ok(state?.realNode, "the first command started a cluster of this name with a real node");
  const kc = loadKubeConfig(state.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const [operator, ...others] = (await core.listNamespacedPod({ namespace: "appstack-system" })).items;
  assert.deepEqual(others, []);
  assert.equal(operator?.spec?.nodeName, state.realNode.nodeName);
  assert.equal(operator?.spec?.containers[0]?.image, "appstack:0.1.0");
  assert.equal(operator?.status?.phase, "Running");
  assert.ok(operator?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"), "the operator's pod is Ready by its own probes");

  const objects = kc.makeApiClient(CustomObjectsApi);
  for (const [plural, name, replicas] of [["apps", "hello", 2], ["memcacheds", "cache", 3]] as const) {
    const object = (await objects.getNamespacedCustomObject({ group: "appstack.dev", version: "v1alpha1", namespace: "default", plural, name })) as Parameters<typeof readyOf>[0];
    assert.ok(readyOf(object), `${plural}/${name} Ready for its generation: ${JSON.stringify(object.status)}`);
    const deployment = await kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name, namespace: "default" });
    assert.equal(deployment.status?.readyReplicas, replicas);
  }

  const down = await run("npx appstack cluster down");
  assert.equal(down.code, 0, down.output);
  assert.deepEqual(processesMentioning(state.dir), [], "`cluster down` leaves no process of the cluster");
  assert.equal(existsSync(state.dir), false, "nor its folder");
});
