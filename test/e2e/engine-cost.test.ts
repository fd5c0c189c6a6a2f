// What one object costs in Pulumi processes, counted exactly: every command the stack driver
// starts goes through the pinned PulumiCommand, which this test wraps. The first new App of a
// state folder costs `stack init` and `up`, every later one `up` alone (new-stacks.ts); a spec
// change `up` alone; a drift repair one `up --refresh`; a delete `destroy` and `stack rm`, also
// after a restart (no `stack select`). Each result is read back from the API server. The Automation API's own follow-up
// commands (`stack output`, `stack history`) must not appear: the driver answers them from the
// engine's events.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { App } from "../../components/app.ts";
import { installApi } from "../../operator/kube/apply.ts";
import { kubeClients, mergePatch } from "../../operator/kube/clients.ts";
import { createLogger } from "../../operator/base/log.ts";
import { engineGcPercent, pulumiCommand } from "../../operator/pulumi/engine.ts";
import { programFor } from "../../operator/pulumi/programs.ts";
import { prepareWorkDir } from "../../operator/pulumi/stack-selection.ts";
import { StackDriver } from "../../operator/pulumi/stacks.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";
import { eventually, isNotFound, useCluster } from "../helpers/cluster.ts";
import { Workloads } from "../helpers/operator.ts";
import { processesUnder } from "../helpers/proctree.ts";
import { engineBinaries } from "../../toolchain/tools.ts";

const stateDir = mkdtempSync(join(tmpdir(), "appstack-engine-cost-"));
after(() => rmSync(stateDir, { recursive: true, force: true }));
const cluster = useCluster(async ({ cluster: c }) => installApi(kubeClients(c.kubeconfig)));

/** The GOGC settings the provider plugins seen by providersDuring ran with (from their /proc environ). */
const providerGogc = new Set<string>();

function environmentOf(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
  } catch {
    return undefined; // gone meanwhile
  }
}

/**
 * The provider plugins started while `work` runs, seen in this process's tree every 10 ms: each
 * lives for most of its engine's run (hundreds of ms), so none goes unseen.
 */
async function providersDuring(work: () => Promise<unknown>): Promise<number> {
  const seen = new Set<number>();
  // The kernel keeps 15 characters of a command name.
  const sample = () => processesUnder(process.pid, "pulumi-resource").forEach((pid) => {
    seen.add(pid);
    const gogc = environmentOf(pid)?.find((entry) => entry.startsWith("GOGC="));
    if (gogc) providerGogc.add(gogc);
  });
  const timer = setInterval(sample, 10);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return seen.size;
}

/** The Pulumi commands started while `work` runs: `stack init`, `up`, `up --refresh`, ... */
async function commandsDuring(work: () => Promise<unknown>): Promise<string[]> {
  // PulumiCommand.run is where every Automation API command starts its process (internal to the
  // SDK: if it moves, nothing is counted and the assertions below fail).
  const command = (await pulumiCommand(join(stateDir, "home"), new StateIo(60_000), engineBinaries().cliRoot)) as unknown as { run: (args: string[], ...rest: unknown[]) => Promise<unknown> };
  const run = command.run.bind(command);
  const seen: string[] = [];
  command.run = (args, ...rest) => {
    const verb = args[0] === "stack" ? `stack ${args[1]}` : args[0]!;
    seen.push(args.includes("--refresh") ? `${verb} --refresh` : verb);
    return run(args, ...rest);
  };
  try {
    await work();
  } finally {
    command.run = run;
  }
  return seen;
}

test("the first new App costs `stack init` and `up`, later ones `up`, a change `up` alone, a drift repair one `up --refresh`; the API server has each result", async () => {
  const { apps, cluster: c } = cluster();
  const workloads = new Workloads(c.kubeconfig);
  process.env["KUBECONFIG"] = c.kubeconfig;
  const backendUrl = `file://${join(stateDir, "backend")}`;
  const log = createLogger({ level: "error", format: "json", write: () => undefined });
  const driver = new StackDriver({ backendUrl, pulumiHome: join(stateDir, "home"), passphrase: "cost", binaries: engineBinaries(), kubeconfig: c.kubeconfig, workDir: await prepareWorkDir(join(stateDir, "work"), new StateIo(60_000)) }, log);
  mkdirSync(join(stateDir, "backend"), { recursive: true });
  let app = (await workloads.create({ kind: "App", metadata: { name: "cost", namespace: "default" }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } })) as App;

  const created = await commandsDuring(async () => assert.deepEqual((await driver.up("app.default.cost", programFor(app), { refresh: false })).resourceChanges, { create: 5 }));
  assert.deepEqual(created, ["stack init", "up"]);
  assert.equal((await apps.readNamespacedDeployment({ name: "cost", namespace: "default" })).spec?.template.spec?.containers[0]?.image, "nginx:1.27");

  app = { ...app, spec: { ...app.spec, image: "nginx:1.28" } };
  const changed = await commandsDuring(async () => assert.equal((await driver.up("app.default.cost", programFor(app), { refresh: false })).resourceChanges?.["update"], 1));
  assert.deepEqual(changed, ["up"]);
  assert.equal((await apps.readNamespacedDeployment({ name: "cost", namespace: "default" })).spec?.template.spec?.containers[0]?.image, "nginx:1.28");

  await apps.patchNamespacedDeploymentScale({ name: "cost", namespace: "default", body: { spec: { replicas: 4 } } }, mergePatch);
  let repaired: string[] = [];
  const repairProviders = await providersDuring(async () => (repaired = await commandsDuring(() => driver.up("app.default.cost", programFor(app), { refresh: true }))));
  assert.deepEqual(repaired, ["up --refresh"]);
  assert.equal(repairProviders, 1, "one provider plugin for the refresh and the update");
  // The engine's GOGC reaches its plugin (engine.ts: fewer collections in a short-lived process).
  assert.deepEqual([...providerGogc], [`GOGC=${engineGcPercent}`]);
  assert.equal((await apps.readNamespacedDeployment({ name: "cost", namespace: "default" })).spec?.replicas, 1);

  const second = (await workloads.create({ kind: "App", metadata: { name: "cost-2", namespace: "default" }, spec: { image: "nginx:1.27", replicas: 1 } })) as App;
  const createdLater = await commandsDuring(async () => assert.deepEqual((await driver.up("app.default.cost-2", programFor(second), { refresh: false })).resourceChanges, { create: 4 }));
  assert.deepEqual(createdLater, ["up"], "made from the template: no `stack init`");
  assert.equal((await apps.readNamespacedDeployment({ name: "cost-2", namespace: "default" })).spec?.template.spec?.containers[0]?.image, "nginx:1.27");

  const destroyed = await commandsDuring(() => driver.destroy("app.default.cost"));
  assert.deepEqual(destroyed, ["destroy", "stack rm"]);
  await workloads.delete("App", "default", "cost");

  // As after a restart: a new driver finds the stack by its file, with no `stack select`.
  const restarted = new StackDriver({ backendUrl, pulumiHome: join(stateDir, "home"), passphrase: "cost", binaries: engineBinaries(), kubeconfig: c.kubeconfig, workDir: join(stateDir, "work") }, log);
  const destroyedAfterRestart = await commandsDuring(() => restarted.destroy("app.default.cost-2"));
  assert.deepEqual(destroyedAfterRestart, ["destroy", "stack rm"]);
  await eventually("cost-2's Deployment deleted", async () => (await apps.readNamespacedDeployment({ name: "cost-2", namespace: "default" }).then(() => undefined, (error: unknown) => (isNotFound(error) ? true : undefined))));
  await workloads.delete("App", "default", "cost-2");
});
