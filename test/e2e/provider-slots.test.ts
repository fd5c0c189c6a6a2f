// The Kubernetes provider kept alive per engine slot (operator/pulumi/provider-slots.ts), with the
// real engine and provider: engines attach to the operator's provider processes instead of
// starting their own; each operation's identity (its KUBECONFIG) reaches the provider it attaches
// to, also right after another identity used the same process; and a provider killed or frozen in
// the middle of a create (held in admission, so that the moment is certain) fails that operation
// within its deadline, is replaced, and the next operation converges, with no process and no lock
// left; one idle past its time ends. Every result is read back from the API server.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { RbacAuthorizationV1Api } from "@kubernetes/client-node";
import type { App } from "../../components/app.ts";
import { createLogger } from "../../operator/base/log.ts";
import { processStat } from "../../operator/base/procfs.ts";
import { installApi } from "../../operator/kube/apply.ts";
import { kubeClients } from "../../operator/kube/clients.ts";
import { programFor } from "../../operator/pulumi/programs.ts";
import { OperationTimedOut } from "../../operator/pulumi/stack-errors.ts";
import type { StackDriver } from "../../operator/pulumi/stacks.ts";
import { eventually, isNotFound, useCluster } from "../helpers/cluster.ts";
import { holdWrites } from "../helpers/hold.ts";
import { lockFiles, Workloads } from "../helpers/operator.ts";
import { processesUnder } from "../helpers/proctree.ts";
import { appStack, slotDriver, type SlotOptions } from "../helpers/slot-driver.ts";
import { auditedRequests, type AuditedRequest } from "../../toolchain/cluster/audit.ts";

const stateRoot = mkdtempSync(join(tmpdir(), "appstack-provider-slots-"));
after(() => rmSync(stateRoot, { recursive: true, force: true }));
const cluster = useCluster(async ({ cluster: c }) => installApi(kubeClients(c.kubeconfig)), undefined, { audit: true });
const namespace = "default";
const log = createLogger({ level: "error", format: "json", write: () => undefined });

/** A driver of its own state folder whose engines attach to `slots` providers kept alive. */
async function driverWith(name: string, slots: number, options: SlotOptions = {}): Promise<{ driver: StackDriver; stateDir: string }> {
  const stateDir = join(stateRoot, name);
  return { driver: await slotDriver(cluster().cluster.kubeconfig, stateDir, slots, log, options), stateDir };
}

async function newApp(name: string): Promise<App> {
  return (await new Workloads(cluster().cluster.kubeconfig).create({ kind: "App", metadata: { name, namespace }, spec: { image: "nginx:1.27", replicas: 1 } })) as App;
}

const stackOf = appStack;

async function deploymentImage(name: string): Promise<string | undefined> {
  return (await cluster().apps.readNamespacedDeployment({ name, namespace })).spec?.template.spec?.containers[0]?.image;
}

async function deploymentAbsent(name: string): Promise<boolean> {
  return cluster().apps.readNamespacedDeployment({ name, namespace }).then(() => false, (error: unknown) => isNotFound(error));
}

/** Provider processes below this process, each with its parent. */
function providerParents(): Map<number, number> {
  return new Map(processesUnder(process.pid, "pulumi-resource").map((pid) => [pid, Number(processStat(pid)?.fields[1])]));
}

/** Stops the driver's providers and waits until none is left below this process. */
async function closed(driver: StackDriver): Promise<void> {
  driver.close();
  await eventually("no provider process left", async () => (processesUnder(process.pid, "pulumi-resource").length === 0 ? true : undefined));
}

test("engines attach to the providers kept alive: six operations, two at a time, run on at most two provider processes, all the operator's, each in a process group of its own, none with the operator's secrets or an object store's credentials", async () => {
  // As the operator has it: the providers it starts must not (they talk to the API server alone),
  // nor an object store's credentials; a variable APPSTACK_PROVIDER_ENV names does.
  const operatorOnly = { APPSTACK_PASSPHRASE: "not-for-the-provider", AWS_SECRET_ACCESS_KEY: "not-for-the-provider", AZURE_STORAGE_KEY: "not-for-the-provider" };
  Object.assign(process.env, operatorOnly, { APPSTACK_PROVIDER_ENV: "AWS_PROFILE", AWS_PROFILE: "for-an-exec-plugin" });
  const { driver } = await driverWith("attach", 2);
  const apps = await Promise.all(["slot-1", "slot-2", "slot-3", "slot-4"].map(newApp));
  const seen = new Map<number, number>();
  const sampler = setInterval(() => providerParents().forEach((parent, pid) => seen.set(pid, parent)), 10);
  try {
    await Promise.all(apps.slice(0, 2).map((app) => driver.up(stackOf(app), programFor(app), { refresh: false })));
    await Promise.all(apps.slice(2).map((app) => driver.up(stackOf(app), programFor(app), { refresh: false })));
    const changed = { ...apps[0]!, spec: { ...apps[0]!.spec, image: "nginx:1.28" } };
    await Promise.all([driver.up(stackOf(changed), programFor(changed), { refresh: false }), driver.up(stackOf(apps[1]!), programFor(apps[1]!), { refresh: true })]);
  } finally {
    clearInterval(sampler);
  }
  assert.ok(seen.size >= 1 && seen.size <= 2, `provider processes seen: ${[...seen.keys()].join(", ")}`);
  for (const [pid, parent] of seen) assert.equal(parent, process.pid, `provider ${pid} is a child of ${parent}, not of the operator: an engine started it`);
  assert.deepEqual(driver.providerPids.sort(), [...seen.keys()].sort(), "the same processes are still there, idle");
  for (const pid of driver.providerPids) {
    // A Ctrl-C in the operator's terminal goes to its process group: a provider there would exit.
    assert.equal(processStat(pid)?.fields[2], String(pid), `provider ${pid} is in the operator's process group`);
    const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
    assert.deepEqual(environ.filter((entry) => entry.endsWith("=not-for-the-provider")), [], `provider ${pid} has the operator's credentials in its environment`);
    assert.ok(environ.includes("AWS_PROFILE=for-an-exec-plugin"), `provider ${pid} lacks what APPSTACK_PROVIDER_ENV names`);
  }
  for (const name of [...Object.keys(operatorOnly), "APPSTACK_PROVIDER_ENV", "AWS_PROFILE"]) delete process.env[name];
  assert.equal(await deploymentImage("slot-1"), "nginx:1.28");
  for (const name of ["slot-2", "slot-3", "slot-4"]) assert.equal(await deploymentImage(name), "nginx:1.27");
  await closed(driver);
});

test("each operation's identity reaches the provider it attaches to, also right after another identity used the same process", async () => {
  const { driver } = await driverWith("identity", 1);
  const nobody = "system:serviceaccount:default:nobody"; // no Role or ClusterRole binds it
  const [first, denied, second, deniedAgain] = await Promise.all(["id-1", "id-2", "id-3", "id-4"].map(newApp));
  await driver.up(stackOf(first!), programFor(first!), { refresh: false });
  const [provider] = driver.providerPids;
  await assert.rejects(driver.up(stackOf(denied!), programFor(denied!), { refresh: false, as: nobody }), /forbidden/);
  // A provider whose operation failed is not used again.
  assert.ok(!driver.providerPids.includes(provider!), "the failed operation's provider was replaced");
  await driver.up(stackOf(second!), programFor(second!), { refresh: false });
  const [kept] = driver.providerPids;
  // The same process that just acted as the admin must now act as nobody.
  await assert.rejects(driver.up(stackOf(deniedAgain!), programFor(deniedAgain!), { refresh: false, as: nobody }), /forbidden/);
  assert.ok(kept !== undefined && !driver.providerPids.includes(kept));
  assert.equal(await deploymentImage("id-1"), "nginx:1.27");
  assert.equal(await deploymentImage("id-3"), "nginx:1.27");
  assert.ok(await deploymentAbsent("id-2"), "nobody's create must have been refused");
  assert.ok(await deploymentAbsent("id-4"), "nobody's create must have been refused, on a process the admin used before");
  await closed(driver);
});

/**
 * A driver of one slot whose up of App `name` is held in admission at its Deployment's create:
 * the provider is mid-create when `disturb` gets its pid. `failed` checks how the up must fail.
 * Once it has, the hold lets go, and the next up of the App must converge on a new provider,
 * leaving no engine, provider or lock.
 */
async function disturbedMidCreate(name: string, options: { operationTimeoutMs?: number }, failed: (error: unknown) => boolean, disturb: (provider: number, release: () => Promise<void>) => Promise<void>): Promise<void> {
  const { driver, stateDir } = await driverWith(name, 1, options);
  const app = await newApp(name);
  const hold = await holdWrites(cluster().cluster, "deployments", "CREATE", namespace, name);
  let released: Promise<void> | undefined;
  const release = () => (released ??= hold.release());
  const running = assert.rejects(driver.up(stackOf(app), programFor(app), { refresh: false }), failed);
  await hold.held;
  const [provider] = driver.providerPids;
  await disturb(provider!, release);
  await running;
  await release();
  await eventually("the disturbed provider to be killed", async () => (processStat(provider!) === undefined ? true : undefined));
  assert.ok(!driver.providerPids.includes(provider!));
  await driver.up(stackOf(app), programFor(app), { refresh: false });
  assert.equal(await deploymentImage(name), "nginx:1.27");
  assert.deepEqual(lockFiles(stateDir), []);
  assert.deepEqual(processesUnder(process.pid, "pulumi"), [], "no engine is left");
  await closed(driver);
}

test("a provider killed in the middle of a create: the operation fails, the provider is replaced, the next up converges; no process or lock is left", async () => {
  await disturbedMidCreate("killed", {}, () => true, async (provider) => {
    process.kill(provider, "SIGKILL");
  });
});

test("a provider frozen in the middle of a create: the operation times out at its deadline, the frozen process is killed, the next up converges; no process or lock is left", async () => {
  await disturbedMidCreate("frozen", { operationTimeoutMs: 5_000 }, (error) => error instanceof OperationTimedOut, async (provider, release) => {
    process.kill(provider, "SIGSTOP");
    await release(); // the API server answers now; the provider cannot hear it
  });
});

/** What the engines' providers (the cluster's admin, as the drivers here) asked of the API server while `run` ran, from its audit log. */
async function providerRequestsDuring(run: () => Promise<unknown>): Promise<{ eventLists: number; openApiFetches: number }> {
  const dir = cluster().cluster.dir;
  // By when each request was received, not by where its line is: a watch is logged when it ends,
  // and the previous operation's plugin may end its watch after that operation has returned.
  const started = Date.now();
  await run();
  const ended = Date.now();
  const during = (request: AuditedRequest) => {
    const received = Date.parse(request.requestReceivedTimestamp);
    return received >= started && received <= ended;
  };
  const requests = auditedRequests(dir).filter((request) => request.user.username === "appstack-admin" && during(request));
  return {
    eventLists: requests.filter((request) => request.objectRef?.resource === "events" && (request.verb === "list" || request.verb === "watch")).length,
    openApiFetches: requests.filter((request) => request.requestURI.startsWith("/openapi/")).length,
  };
}

test("a kept provider lists no Events, and its operations in a burst share one parse of the OpenAPI document; a plugin an engine starts does both each time", async () => {
  const [first, second, third] = await Promise.all(["burst-1", "burst-2", "burst-3"].map(newApp));
  // What the count sees without the kept providers: the check that the test can fail. A plugin
  // fetches the OpenAPI document within its create, every time; its Events informer lists from a
  // goroutine started after the create, which the engine may end before it asks (seen under load:
  // skipAwait returns at once). So the check takes the first of a few plugin operations that listed.
  const { driver: unkept } = await driverWith("burst-unkept", 0);
  const seen: Array<{ eventLists: number; openApiFetches: number }> = [];
  for (let attempt = 0; attempt < 5 && !seen.some((counts) => counts.eventLists >= 1); attempt++) {
    const plain = await newApp(`burst-0-${attempt}`);
    seen.push(await providerRequestsDuring(() => unkept.up(stackOf(plain), programFor(plain), { refresh: false })));
  }
  assert.ok(seen.some((counts) => counts.eventLists >= 1) && seen.every((counts) => counts.openApiFetches >= 1), `a plugin's own operations: ${JSON.stringify(seen)}`);
  unkept.close();
  const { driver } = await driverWith("burst", 1);
  const withSlots = await providerRequestsDuring(async () => {
    for (const app of [first!, second!, third!]) await driver.up(stackOf(app), programFor(app), { refresh: false });
  });
  assert.deepEqual(withSlots, { eventLists: 0, openApiFetches: 1 });
  for (const name of ["burst-1", "burst-2", "burst-3"]) assert.equal(await deploymentImage(name), "nginx:1.27");
  await closed(driver);
});

test("operations of many tenants on one API server share one parse of the OpenAPI document: the kept data is the server's, not each identity's", async () => {
  const tenants = ["tenant-1", "tenant-2", "tenant-3", "tenant-4"];
  const rbac = kubeClients(cluster().cluster.kubeconfig).config.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createClusterRoleBinding({ body: { metadata: { name: "provider-slots-tenants" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" }, subjects: tenants.map((name) => ({ apiGroup: "rbac.authorization.k8s.io", kind: "User", name })) } });
  const apps = await Promise.all(tenants.map((tenant) => newApp(`of-${tenant}`)));
  const { driver } = await driverWith("tenants", 1);
  // Each tenant's kubeconfig differs (its `as:` user); keyed by its bytes, each parsed its own document.
  const requests = await providerRequestsDuring(async () => {
    for (const [at, app] of apps.entries()) await driver.up(stackOf(app), programFor(app), { refresh: false, as: tenants[at] });
  });
  assert.equal(requests.openApiFetches, 1, `OpenAPI fetches over ${tenants.length} tenants: ${requests.openApiFetches}`);
  for (const tenant of tenants) assert.equal(await deploymentImage(`of-${tenant}`), "nginx:1.27");
  await closed(driver);
});

test("a provider idle past its time ends, and the next operation starts another", async () => {
  const { driver } = await driverWith("idle", 1, { providerIdleMs: 1_000 });
  const [first, second] = await Promise.all(["idle-1", "idle-2"].map(newApp));
  await driver.up(stackOf(first!), programFor(first!), { refresh: false });
  const [provider] = driver.providerPids;
  assert.ok(provider !== undefined, "kept after the operation");
  await eventually("the idle provider to end", async () => (processesUnder(process.pid, "pulumi-resource").length === 0 && driver.providerPids.length === 0 ? true : undefined));
  await driver.up(stackOf(second!), programFor(second!), { refresh: false });
  assert.equal(await deploymentImage("idle-2"), "nginx:1.27");
  assert.ok(!driver.providerPids.includes(provider));
  await closed(driver);
});
