// Kept providers are a debug facility of the engine (PULUMI_DEBUG_PROVIDERS) put to work, so each
// new one is checked before an engine attaches to it (operator/pulumi/provider-check.ts). A slot
// binary that fails the check (a stock plugin that reads no environment from its input; one that
// refuses an engine's Attach) turns the kept providers off, with a warning, and every operation
// runs as without them, on a provider plugin of its own: every object converges. Results are
// read back from the API server.
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { App } from "../../components/app.ts";
import { createLogger } from "../../operator/base/log.ts";
import { installApi } from "../../operator/kube/apply.ts";
import { kubeClients } from "../../operator/kube/clients.ts";
import { programFor } from "../../operator/pulumi/programs.ts";
import { repoRoot } from "../../toolchain/tools.ts";
import { eventually, useCluster } from "../helpers/cluster.ts";
import { Workloads } from "../helpers/operator.ts";
import { processesUnder } from "../helpers/proctree.ts";
import { appStack, slotDriver } from "../helpers/slot-driver.ts";

const scratch = mkdtempSync(join(tmpdir(), "appstack-provider-fallback-"));
after(() => rmSync(scratch, { recursive: true, force: true }));
const cluster = useCluster(async ({ cluster: c }) => installApi(kubeClients(c.kubeconfig)));
const namespace = "default";

/** An executable at `name` that runs `script` (sh). */
function executable(name: string, script: string): string {
  const path = join(scratch, name);
  writeFileSync(path, `#!/bin/sh\n${script}\n`);
  chmodSync(path, 0o755);
  return path;
}

/**
 * Two new Apps applied by a driver of one kept provider whose binary is `binary`: each must be
 * created through a plugin of the engine's own, the kept providers off with `warning` logged,
 * and nothing of the binary (a process named `command`) left running.
 */
async function convergesWithout(name: string, binary: string, command: string, warning: RegExp): Promise<void> {
  const warnings: string[] = [];
  const log = createLogger({ level: "warn", format: "json", write: (line) => void warnings.push(line) });
  const driver = await slotDriver(cluster().cluster.kubeconfig, join(scratch, name), 1, log, { providerSlotBinary: binary });
  const workloads = new Workloads(cluster().cluster.kubeconfig);
  for (const app of [`${name}-1`, `${name}-2`]) {
    const created = (await workloads.create({ kind: "App", metadata: { name: app, namespace }, spec: { image: "nginx:1.27", replicas: 1 } })) as App;
    await driver.up(appStack(created), programFor(created), { refresh: false });
    const deployment = await cluster().apps.readNamespacedDeployment({ name: app, namespace });
    assert.equal(deployment.spec?.template.spec?.containers[0]?.image, "nginx:1.27");
  }
  assert.deepEqual(driver.providerPids, [], "no provider is kept");
  const said = warnings.filter((line) => line.includes("kept providers are off"));
  assert.equal(said.length, 1, `one warning, not one per operation: ${said.join("\n")}`);
  assert.match(said[0]!, warning);
  // The engines and their plugins have ended with their operations: a process of `command` left would be the binary's.
  await eventually(`nothing of ${binary} left running`, async () => (processesUnder(process.pid, command).length === 0 ? true : undefined));
  driver.close();
}

test("a stock plugin (it prints a port, and reads nothing from its input): kept providers off, every App converges on plugins of their own", async () => {
  const stock = executable("stock-provider", "echo 1\nexec sleep 600");
  await convergesWithout("stock", stock, "sleep", /does not serve as a kept provider \(the kubernetes provider \(pid \d+\) did not answer with the operation's environment within 10 s/);
});

test("a provider that refuses an engine's Attach: kept providers off, every App converges on plugins of their own", async () => {
  const refusing = executable("refusing-provider", `exec "${process.execPath}" "${join(repoRoot, "test/helpers/refusing-provider.mjs")}"`);
  await convergesWithout("refusing", refusing, "node", /does not serve as a kept provider \(Attach: 7 PERMISSION_DENIED: this provider takes no engine\)/);
});
