// appstack as users run it in a cluster: the images `appstack image` builds, loaded into the real
// node of a local cluster, installed with `npx appstack pulumi up` of the repository's program;
// the operator pod passes its own probes, and an App and a Memcached reach Ready with pods that
// really serve (HTTP and memcached `stats` through their Services, from the host). One real-node
// cluster for the file. Needs root and Debian's packages (test/helpers/real-node-gate.ts).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AdmissionregistrationV1Api, ApiextensionsV1Api, AppsV1Api, CoreV1Api, RbacAuthorizationV1Api, type V1Container, type V1Pod } from "@kubernetes/client-node";
import { startCluster, type LocalCluster } from "../../toolchain/cluster/cluster.ts";
import { loadImage } from "../../toolchain/cluster/node.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { buildImages } from "../../toolchain/images/build.ts";
import { repoRoot, toolPath } from "../../toolchain/tools.ts";
import { eventually, eventWithReason, isNotFound } from "../helpers/cluster.ts";
import { holdWrites } from "../helpers/hold.ts";
import { httpGet } from "../helpers/http.ts";
import { memcachedStats, podMemory } from "../helpers/pod-probes.ts";
import { counterTotal, metricValue, Workloads } from "../helpers/operator.ts";
import { isReady, killContainer, operatorNamespace, podGoneWithLog, podsOf as podsOfIn, repositoryProgram } from "../helpers/operator-install.ts";
import { podFirstPassDone, podMetrics, stackUpdateCount, volumeHostPath } from "../helpers/operator-pod.ts";
import { installScraper } from "../helpers/metrics-reader.ts";
import { realNodeSkip } from "../helpers/real-node-gate.ts";
import { kubectlApply, liveObjects, manifestObjects, renderedInstall, stackObjects } from "../helpers/install-objects.ts";
import { assertReadsThroughRbac } from "../helpers/person.ts";
import { installPluginBin } from "../../operator/cmd/plugin-bin.ts";

const skip = realNodeSkip("images and node");
const enabled = skip === false;
const namespace = "default";
const waitMs = 300_000;

const stateDir = mkdtempSync(join(tmpdir(), "appstack-in-cluster-"));
const stack = `in-cluster-${process.pid}`;
const fileStarted = Date.now();
let cluster: LocalCluster | undefined;
let core: CoreV1Api;
let apps: AppsV1Api;
let workloads: Workloads;
const images = new Map<string, string>();
const figures: string[] = [];

function figure(line: string): void {
  figures.push(line);
  console.error(`figure: ${line}`);
}

const secondsSince = (start: number) => ((Date.now() - start) / 1000).toFixed(1);

const { ok: pulumiOk } = repositoryProgram(() => cluster!, stateDir);
const podsOf = (ns: string, selector: string) => podsOfIn(core, ns, selector);

before(async () => {
  if (!enabled) return;
  let started = Date.now();
  for (const image of await buildImages(() => undefined)) images.set(image.name, image.archive);
  figure(`images built or refreshed in ${secondsSince(started)} s`);
  started = Date.now();
  cluster = await startCluster({ realNode: true, exitOnSignal: true, log: (line) => console.error(line) });
  figure(`real-node cluster started in ${secondsSince(started)} s`);
  started = Date.now();
  for (const archive of images.values()) loadImage(cluster, archive);
  figure(`three images loaded into the node in ${secondsSince(started)} s`);
  const kc = loadKubeConfig(cluster.kubeconfig);
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  workloads = new Workloads(cluster.kubeconfig);
});

after(async () => {
  if (cluster) await cluster.stop();
  rmSync(stateDir, { recursive: true, force: true });
  rmSync(join(repoRoot, `Pulumi.${stack}.yaml`), { force: true });
  if (enabled) console.error(`figures:\n  ${[...figures, `file duration ${secondsSince(fileStarted)} s`].join("\n  ")}`);
});

let operatorPod: V1Pod;
/** A token that may read the operator's /metrics (its ClusterRoleBinding outlives each install's role: bound again by name). */
const scraper = installScraper(() => cluster!.kubeconfig);

/** The Pod Security level a namespace enforces (its label), if any. */
const enforcedPodSecurity = async (name: string) => (await core.readNamespace({ name })).metadata?.labels?.["pod-security.kubernetes.io/enforce"];
/** The live objects of the first install (`pulumi up`), read once it was Ready. */
let pulumiInstall: Awaited<ReturnType<typeof liveObjects>> = [];

/** The install's appstack:podStartTimeoutSeconds. */
const podStartTimeoutSeconds = 30;
const envValue = (container: V1Container | undefined, name: string) => container?.env?.find((e) => e.name === name)?.value;
const readOnlyRoot = (pod: V1Pod) => pod.spec?.containers[0]?.securityContext?.readOnlyRootFilesystem;

test("`pulumi up` installs the operator from the image into a namespace that enforces Pod Security restricted; its claim binds through local-path and the pod, its root file system read-only, is Ready by its own probes", { skip, timeout: 900_000 }, async () => {
  await pulumiOk("stack", "init", stack);
  await pulumiOk("config", "set", "--secret", "appstack:passphrase", "in-cluster-passphrase", "--stack", stack);
  await pulumiOk("config", "set", "appstack:image", "appstack:0.1.0", "--stack", stack);
  // Shorter than the default two minutes, so that the restricted test's unpullable App turns Stalled sooner.
  await pulumiOk("config", "set", "appstack:podStartTimeoutSeconds", String(podStartTimeoutSeconds), "--stack", stack);
  const started = Date.now();
  await pulumiOk("up", "--yes", "--skip-preview", "--stack", stack);
  const deployment = await apps.readNamespacedDeployment({ name: "appstack-operator", namespace: operatorNamespace });
  const container = deployment.spec?.template.spec?.containers[0];
  assert.equal(container?.image, "appstack:0.1.0");
  assert.notEqual(container?.imagePullPolicy, "Always", "the kubelet must use the image loaded into the node");
  assert.equal(envValue(container, "APPSTACK_POD_START_TIMEOUT_SECONDS"), String(podStartTimeoutSeconds));
  // The API server admits the operator's pods there only if they meet restricted.
  assert.equal(await enforcedPodSecurity(operatorNamespace), "restricted");
  const claim = await core.readNamespacedPersistentVolumeClaim({ name: "appstack-operator-state", namespace: operatorNamespace });
  assert.equal(claim.status?.phase, "Bound");
  operatorPod = await eventually("the operator pod Ready", async () => {
    const [pod] = await podsOf(operatorNamespace, "app.kubernetes.io/name=appstack-operator");
    return pod && isReady(pod) ? pod : undefined;
  }, waitMs);
  figure(`install: pulumi up to operator pod Ready ${secondsSince(started)} s`);
  // What `pulumi up` made, as the API server has it: the rendered install is compared with it at the end.
  const exported = join(stateDir, "install-export.json");
  await pulumiOk("stack", "export", "--file", exported, "--stack", stack);
  pulumiInstall = await liveObjects(loadKubeConfig(cluster!.kubeconfig), stackObjects(exported));
  assert.equal(operatorPod.spec?.nodeName, cluster!.realNode!.nodeName);
  assert.equal(operatorPod.status?.phase, "Running");
  const [status] = operatorPod.status?.containerStatuses ?? [];
  assert.ok(status?.ready && status.state?.running, JSON.stringify(status));
  assert.equal(status.restartCount, 0, JSON.stringify(status));
  assert.equal(status.image, "docker.io/library/appstack:0.1.0");
  const conditions = Object.fromEntries((operatorPod.status?.conditions ?? []).map((c) => [c.type, c.status]));
  assert.equal(conditions["ContainersReady"], "True");
  assert.equal(readOnlyRoot(operatorPod), true);
  const logs = await core.readNamespacedPodLog({ name: operatorPod.metadata!.name!, namespace: operatorNamespace });
  assert.doesNotMatch(logs, /EACCES|EROFS|read-only file system|"level":"error"/, logs);
});

test("an App of the http image, replicas 2, port 80: Ready, its pods Running and Ready on the node, its Service answers 200 through kube-proxy", { skip, timeout: 600_000 }, async () => {
  const started = Date.now();
  await workloads.create({ kind: "App", metadata: { name: "web", namespace }, spec: { image: "localhost/appstack/http:0.1.0", replicas: 2, port: 80 } });
  const app = await workloads.ready("App", namespace, "web", waitMs);
  figure(`App Ready in ${secondsSince(started)} s (create to Ready, through the operator pod)`);
  assert.equal(app.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
  const pods = (await podsOf(namespace, "app.kubernetes.io/instance=web")).filter((pod) => !pod.metadata?.deletionTimestamp);
  assert.equal(pods.length, 2, JSON.stringify(pods.map((pod) => pod.metadata?.name)));
  for (const pod of pods) {
    assert.equal(pod.spec?.nodeName, cluster!.realNode!.nodeName);
    assert.equal(pod.status?.phase, "Running");
    assert.ok(isReady(pod), JSON.stringify(pod.status?.conditions));
  }
  const service = await core.readNamespacedService({ name: "web", namespace });
  const clusterIp = service.spec?.clusterIP ?? "";
  assert.match(clusterIp, /^10\.96\./);
  const answer = await eventually("the App's Service from the host", async () => {
    const response = await httpGet(`http://${clusterIp}/`).catch(() => undefined);
    return response?.status === 200 ? response : undefined;
  }, 60_000);
  assert.equal(answer.status, 200);
});

test("a Memcached of the memcached image: Ready, `stats` answers through its Service, status.nodes names its real pods", { skip, timeout: 600_000 }, async () => {
  const started = Date.now();
  await workloads.create({ kind: "Memcached", metadata: { name: "cache", namespace }, spec: { size: 2, image: "localhost/appstack/memcached:0.1.0" } });
  const cache = await workloads.ready("Memcached", namespace, "cache", waitMs);
  figure(`Memcached Ready in ${secondsSince(started)} s`);
  const pods = (await podsOf(namespace, "app.kubernetes.io/instance=cache")).filter((pod) => !pod.metadata?.deletionTimestamp);
  for (const pod of pods) assert.ok(pod.status?.phase === "Running" && isReady(pod), JSON.stringify(pod.status));
  assert.deepEqual((cache.status as { nodes?: string[] } | undefined)?.nodes, pods.map((pod) => pod.metadata!.name!).sort());
  const service = await core.readNamespacedService({ name: "cache", namespace });
  const stats = await eventually("memcached stats through the Service", () => memcachedStats(service.spec!.clusterIP!, 11211).catch(() => undefined), 60_000);
  assert.match(stats, /^STAT version 1\.6\./m);
  assert.match(stats, /^STAT limit_maxbytes 67108864\r$/m);
  const memory = podMemory(operatorPod, cluster!.realNode!.cgroupRoot);
  if (memory) figure(`operator pod memory (cgroup): ${memory.usage.toFixed(0)} MiB now, ${memory.peak.toFixed(0)} MiB peak`);
});

/** `kubectl wait --for=condition=Ready` as a person types it: a watch, which returns as soon as the status says Ready. */
function kubectlWaitReady(object: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(toolPath("kubectl"), [`--kubeconfig=${cluster!.kubeconfig}`, `--namespace=${namespace}`, "wait", "--for=condition=Ready", object, "--timeout=240s"], { timeout: 300_000 }, (error, stdout, stderr) => (error ? reject(new Error(`kubectl wait ${object}: ${stderr || error.message}`)) : resolve(void stdout)));
  });
}

const firstRequestTries = 20;

test(`${firstRequestTries} Apps in turn, each created, waited for with kubectl wait and asked at once through its Service: every first request is answered 200`, { skip, timeout: 900_000 }, async () => {
  const started = Date.now();
  const answers: string[] = [];
  for (let i = 0; i < firstRequestTries; i++) {
    const name = `first-${i}`;
    await workloads.create({ kind: "App", metadata: { name, namespace }, spec: { image: "localhost/appstack/http:0.1.0", replicas: 1, port: 80 } });
    await kubectlWaitReady(`app/${name}`);
    const clusterIp = (await core.readNamespacedService({ name, namespace })).spec?.clusterIP ?? "";
    // One request, no retry: the App said Ready, so its Service must serve now.
    const answer = await httpGet(`http://${clusterIp}/`).then((response) => String(response.status), (error: unknown) => (error instanceof Error ? error.message : String(error)));
    answers.push(`${name}: ${answer}`);
    await workloads.delete("App", namespace, name);
  }
  figure(`${firstRequestTries} Apps created, Ready and asked in turn in ${secondsSince(started)} s`);
  assert.deepEqual(answers.filter((answer) => !answer.endsWith(": 200")), [], answers.join("; "));
  for (let i = 0; i < firstRequestTries; i++) await workloads.gone("App", namespace, `first-${i}`, waitMs);
});

const hardened = "hardened";

/** The object is Ready, its one pod runs under the restricted securityContext, and memcached answers `stats` through its Service. */
async function readyAndServing(kind: "App" | "Memcached", name: string, service: string): Promise<void> {
  await workloads.ready(kind, hardened, name, waitMs);
  const [pod] = (await podsOf(hardened, `app.kubernetes.io/instance=${name}`)).filter((p) => !p.metadata?.deletionTimestamp);
  assert.ok(pod && pod.status?.phase === "Running" && isReady(pod), JSON.stringify(pod?.status));
  assert.deepEqual([pod.spec?.securityContext?.runAsNonRoot, pod.spec?.securityContext?.seccompProfile?.type], [true, "RuntimeDefault"]);
  const { spec } = await core.readNamespacedService({ name: service, namespace: hardened });
  const stats = await eventually(`${kind} ${name}: memcached stats through its Service`, () => memcachedStats(spec!.clusterIP!, 11211).catch(() => undefined), 60_000);
  assert.match(stats, /^STAT version 1\.6\./m);
}

/** Stalled with the Deployment's FailedCreate in the API server's words, and an Event saying so. */
async function refusedByPodSecurity(name: string): Promise<void> {
  const refused = await workloads.condition("App", hardened, name, "Stalled", "True", 60_000);
  const conditions = new Map((refused.status?.conditions ?? []).map((c) => [c.type, c]));
  assert.deepEqual([conditions.get("Stalled")?.reason, conditions.get("Ready")?.status, conditions.get("Ready")?.reason], ["FailedCreate", "False", "FailedCreate"]);
  assert.match(conditions.get("Stalled")?.message ?? "", /violates PodSecurity "restricted:latest"/);
  await eventWithReason(core, hardened, name, "FailedCreate", (message) => message.includes("PodSecurity"));
}

/** Ready False naming the image that cannot be pulled, counted in status.podsNotStarting. */
async function namesImagePull(name: string, image: string): Promise<void> {
  const condition = await eventually(`App ${name} names ImagePullBackOff or ErrImagePull`, async () => {
    const ready = (await workloads.get("App", hardened, name)).status?.conditions?.find((c) => c.type === "Ready");
    return ready && /^(ImagePullBackOff|ErrImagePull)$/.test(ready.reason) ? ready : undefined;
  }, waitMs);
  assert.ok(condition.message.startsWith(`1 of 1 pods cannot start: pod ${name}-`), condition.message);
  assert.match(condition.message, new RegExp(`container app (ImagePullBackOff|ErrImagePull) \\(image ${image.replace(/[./]/g, "\\$&")}\\)`));
  assert.equal((await workloads.get("App", hardened, name)).status?.podsNotStarting, 1);
}

test("a person with a Role in default only and nothing but a kubeconfig reads the App's history and the status through the API server (the operator's state is a volume in its pod); refused in another namespace", { skip, timeout: 300_000 }, async () => {
  await assertReadsThroughRbac(loadKubeConfig(cluster!.kubeconfig), cluster!.kubeconfig, installPluginBin(join(stateDir, "bin")), "alice", namespace, "web", "kube-system");
});

test("in a namespace that enforces Pod Security restricted: a Memcached and a Restricted App are Ready and serve, an App whose image needs root is Stalled naming PodSecurity, an image that cannot be pulled is named, then Stalled", { skip, timeout: 600_000 }, async () => {
  await core.createNamespace({ body: { metadata: { name: hardened, labels: { "pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest" } } } });
  const started = Date.now();
  const absent = "localhost/appstack/absent:0.1.0";
  const objects = [
    // Memcached meets restricted by default (as user 11211).
    { kind: "Memcached", metadata: { name: "cache", namespace: hardened }, spec: { size: 1, image: "localhost/appstack/memcached:0.1.0" } },
    // An App asks for it; the memcached image names no numeric user, so the App gives one.
    { kind: "App", metadata: { name: "compliant", namespace: hardened }, spec: { image: "localhost/appstack/memcached:0.1.0", replicas: 1, port: 11211, podSecurity: { profile: "Restricted", runAsUser: 11211 } } },
    // nginx's master runs as root (Baseline, the App's default): the API server refuses its pods.
    { kind: "App", metadata: { name: "root", namespace: hardened }, spec: { image: "localhost/appstack/http:0.1.0", replicas: 1, port: 80 } },
    // Nothing here can be pulled from a registry.
    { kind: "App", metadata: { name: "unpullable", namespace: hardened }, spec: { image: absent, replicas: 1, podSecurity: { profile: "Restricted", runAsUser: 10001 } } },
  ] as const;
  await Promise.all(objects.map((object) => workloads.create(object)));

  await refusedByPodSecurity("root");
  figure(`App whose pods Pod Security refuses Stalled in ${secondsSince(started)} s`);
  await readyAndServing("Memcached", "cache", "cache");
  await readyAndServing("App", "compliant", "compliant");
  figure(`restricted Memcached and App Ready and serving in ${secondsSince(started)} s`);
  await namesImagePull("unpullable", absent);
  // Past the bound (the install's podStartTimeoutSeconds) it needs a person: Stalled, with no change of anyone's.
  const stalled = await workloads.condition("App", hardened, "unpullable", "Stalled", "True", waitMs);
  figure(`unpullable App Stalled ${secondsSince(started)} s after its creation`);
  // The bound runs from the pod's creationTimestamp, which the API server keeps in whole seconds: up
  // to a second before the pod was made, never before `started`'s second.
  assert.ok(Date.now() - started >= (podStartTimeoutSeconds - 1) * 1000, `Stalled before the bound of ${podStartTimeoutSeconds} s`);
  assert.match(stalled.status?.conditions?.find((c) => c.type === "Stalled")?.reason ?? "", /^(ImagePullBackOff|ErrImagePull)$/);

  for (const { kind, metadata } of objects) await workloads.delete(kind, hardened, metadata.name);
  for (const { kind, metadata } of objects) await workloads.gone(kind, hardened, metadata.name, waitMs);
});

const loadApps = Array.from({ length: 6 }, (_, index) => `load-${index}`);

test("six Apps created at once at the install's parallelism (3): all Ready, then all deleted; the operator pod's memory peak (its cgroup) measured", { skip, timeout: 900_000 }, async () => {
  const started = Date.now();
  let mostRunning = 0;
  let loading = true;
  // How many engines ran at once, from the pod's own gauge, while the load lasts.
  const sampling = (async () => {
    while (loading) {
      const running = metricValue(await podMetrics(operatorPod, await scraper()).catch(() => ""), "appstack_pulumi_operations_running") ?? 0;
      mostRunning = Math.max(mostRunning, running);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();
  try {
    await Promise.all(loadApps.map((name) => workloads.create({ kind: "App", metadata: { name, namespace }, spec: { image: "localhost/appstack/http:0.1.0", replicas: 1, port: 80 } })));
    await Promise.all(loadApps.map((name) => workloads.ready("App", namespace, name, waitMs)));
    figure(`six Apps created at once: all Ready in ${secondsSince(started)} s`);
    const deleting = Date.now();
    await Promise.all(loadApps.map((name) => workloads.delete("App", namespace, name)));
    await Promise.all(loadApps.map((name) => workloads.gone("App", namespace, name, waitMs)));
    figure(`six Apps deleted at once: all gone in ${secondsSince(deleting)} s`);
  } finally {
    loading = false;
    await sampling;
  }
  figure(`most Pulumi operations running at once: ${mostRunning}`);
  assert.ok(mostRunning <= 3, `${mostRunning} engines at once at parallelism 3`);
  const memory = podMemory(operatorPod, cluster!.realNode!.cgroupRoot);
  assert.ok(memory, "the operator pod's memory cgroup");
  figure(`operator pod memory (cgroup) after the six Apps: ${memory.usage.toFixed(0)} MiB now, ${memory.peak.toFixed(0)} MiB peak (page cache included)`);
  const pod = await core.readNamespacedPod({ name: operatorPod.metadata!.name!, namespace: operatorNamespace });
  assert.equal(pod.status?.containerStatuses?.[0]?.restartCount, 0, "not killed for its memory limit");
  // The install's default request (components/install.ts) is sized from this peak: it must still cover it.
  const request = pod.spec?.containers[0]?.resources?.requests?.["memory"] ?? "";
  assert.match(request, /^\d+Mi$/);
  assert.ok(memory.peak < parseInt(request, 10), `peak ${memory.peak.toFixed(0)} MiB above the request ${request}`);
});

test("the operator pod deleted while an App change is in flight: it stops within its grace, the new pod applies the change", { skip, timeout: 600_000 }, async () => {
  // The old pod's engine is inside its update (the Deployment's patch held at admission) when the pod is deleted.
  const hold = await holdWrites(cluster!, "deployments", "UPDATE", namespace, "web", /^appstack$/);
  try {
    await workloads.mergeSpec("App", namespace, "web", { replicas: 3 });
    await hold.held;
    const oldName = operatorPod.metadata!.name!;
    const deleted = Date.now();
    await core.deleteNamespacedPod({ name: oldName, namespace: operatorNamespace });
    // The kubelet has been told (the pod is terminating) before the held write goes on.
    await eventually("the old operator pod terminating", async () => {
      const pod = await core.readNamespacedPod({ name: oldName, namespace: operatorNamespace });
      return pod.metadata?.deletionTimestamp ? true : undefined;
    }, 30_000);
    await hold.release();
    const { gone, log } = await podGoneWithLog(core, oldName, operatorNamespace, 120_000);
    const stopSeconds = (Date.now() - deleted) / 1000;
    assert.ok(gone, `the old pod still there ${stopSeconds} s after its delete; its last log:\n${log}`);
    figure(`operator pod deleted mid-update: gone ${stopSeconds.toFixed(1)} s after the delete (grace 90 s)`);
    // The held write released, its operation ends in seconds: gone well before the operations' grace
    // (60 s), the shutdown's own deadline (75 s) and the kubelet's SIGKILL (90 s). It stopped on SIGTERM.
    assert.ok(stopSeconds < 45, `the old pod took ${stopSeconds} s to stop on SIGTERM; its last log:\n${log}`);
  } finally {
    await hold.release().catch(() => undefined);
  }
  operatorPod = await eventually("the new operator pod Ready", async () => {
    const [pod] = (await podsOf(operatorNamespace, "app.kubernetes.io/name=appstack-operator")).filter((p) => !p.metadata?.deletionTimestamp);
    return pod && isReady(pod) ? pod : undefined;
  }, waitMs);
  assert.equal(operatorPod.status?.containerStatuses?.[0]?.restartCount, 0);
  const app = await workloads.ready("App", namespace, "web", waitMs);
  assert.equal((app.spec as { replicas?: number }).replicas, 3);
  const pods = await eventually("three web pods Ready", async () => {
    const current = (await podsOf(namespace, "app.kubernetes.io/instance=web")).filter((pod) => !pod.metadata?.deletionTimestamp);
    return current.length === 3 && current.every(isReady) ? current : undefined;
  }, 60_000);
  assert.equal(pods.length, 3);
  const deployment = await apps.readNamespacedDeployment({ name: "web", namespace });
  assert.equal(deployment.spec?.replicas, 3);
});

const killOperatorContainer = (pod: V1Pod) => killContainer(cluster!, pod);

test("the default install's operator container killed while an App change is in flight: the kubelet restarts it, the held change is applied", { skip, timeout: 600_000 }, async () => {
  // Its engine holds the stack's lock, inside the update (the Deployment's patch held), when the container is killed.
  const hold = await holdWrites(cluster!, "deployments", "UPDATE", namespace, "web", /^appstack$/);
  const name = operatorPod.metadata!.name!;
  try {
    await workloads.mergeSpec("App", namespace, "web", { replicas: 4 });
    await hold.held;
    killOperatorContainer(operatorPod);
    operatorPod = await eventually("the operator container restarted and Ready", async () => {
      const pod = await core.readNamespacedPod({ name, namespace: operatorNamespace });
      return (pod.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 && isReady(pod) ? pod : undefined;
    }, 120_000);
  } finally {
    await hold.release();
  }
  const app = await workloads.ready("App", namespace, "web", waitMs);
  assert.equal(app.status?.observedGeneration, app.metadata.generation);
  assert.equal((await apps.readNamespacedDeployment({ name: "web", namespace })).spec?.replicas, 4);
  await eventually("four web pods Ready", async () => {
    const current = (await podsOf(namespace, "app.kubernetes.io/instance=web")).filter((pod) => !pod.metadata?.deletionTimestamp);
    return current.length === 4 && current.every(isReady) ? true : undefined;
  }, 60_000);
  // The same pod, its container started again: the new container broke the lock its pod's name left.
  assert.equal(operatorPod.metadata?.name, name);
  assert.equal(operatorPod.status?.containerStatuses?.[0]?.restartCount, 1);
  const logs = await core.readNamespacedPodLog({ name, namespace: operatorNamespace });
  assert.match(logs, /"msg":"breaking a stack lock of an earlier container of this pod's name"[^\n]*"stack":"[^"]*web/, logs);
  assert.ok(!JSON.stringify(app.status?.conditions).includes("StackLocked"), JSON.stringify(app.status?.conditions));
});

const upgraded = [["App", "web"], ["Memcached", "cache"]] as const;

/** What must not move in an upgrade: each object's readiness and generations, its Deployment, its pods, its stack's updates. */
function settled(stateFolder: string) {
  return Promise.all(upgraded.map(async ([kind, name]) => {
    const object = await workloads.get(kind, namespace, name);
    const deployment = await apps.readNamespacedDeployment({ name, namespace });
    const pods = (await podsOf(namespace, `app.kubernetes.io/instance=${name}`)).filter((pod) => !pod.metadata?.deletionTimestamp);
    return {
      object: `${kind}/${name}`,
      ready: object.status?.conditions?.find((c) => c.type === "Ready")?.status,
      generation: object.metadata.generation,
      observedGeneration: object.status?.observedGeneration,
      deployment: { uid: deployment.metadata?.uid, generation: deployment.metadata?.generation },
      pods: pods.map((pod) => pod.metadata?.uid).sort(),
      updates: stackUpdateCount(stateFolder, kind, namespace, name),
    };
  }));
}

/** The old operator pod gone; the new one runs the new build's image, Ready and never restarted. */
async function assertReplaced(old: V1Pod, pod: V1Pod): Promise<void> {
  await assert.rejects(core.readNamespacedPod({ name: old.metadata!.name!, namespace: operatorNamespace }), isNotFound);
  assert.equal(pod.spec?.containers[0]?.image, "appstack:0.1.1");
  const [status] = pod.status?.containerStatuses ?? [];
  assert.ok(status?.ready && status.state?.running, JSON.stringify(status));
  assert.equal(status.restartCount, 0, JSON.stringify(status));
  assert.equal(status.image, "docker.io/library/appstack:0.1.1");
  // Another image (another content), not a second name of the old one.
  assert.match(status.imageID ?? "", /sha256:[0-9a-f]{64}$/);
  assert.notEqual(status.imageID, old.status?.containerStatuses?.[0]?.imageID);
}

const buildInfo = (metrics: string) => /^appstack_build_info\{version="([^"]*)"/m.exec(metrics)?.[1];

test("an upgrade to another build (an image of APPSTACK_VERSION 0.1.1, `pulumi up` with appstack:image=appstack:0.1.1): the pod recreated on it, every object still Ready, nothing applied again", { skip, timeout: 900_000 }, async () => {
  // The pod of the test before has been through both objects: what it would apply is applied.
  const oldMetrics = await podFirstPassDone(operatorPod, await scraper(), upgraded.length);
  assert.equal(buildInfo(oldMetrics), "0.1.0", oldMetrics);
  const claim = await core.readNamespacedPersistentVolumeClaim({ name: "appstack-operator-state", namespace: operatorNamespace });
  const stateFolder = volumeHostPath(await core.readPersistentVolume({ name: claim.spec!.volumeName! }));
  const before = await settled(stateFolder);
  for (const object of before) assert.ok(object.ready === "True" && object.updates >= 1 && object.pods.length >= 2, JSON.stringify(object));

  // The second build differs from the first in its last layer (APPSTACK_VERSION); the rest comes from the layer cache.
  let started = Date.now();
  const [second] = await buildImages(() => undefined, { version: "0.1.1", only: ["operator"] });
  figure(`second operator build (0.1.1) in ${secondsSince(started)} s`);
  started = Date.now();
  loadImage(cluster!, second!.archive);
  figure(`second operator image loaded into the node in ${secondsSince(started)} s`);

  const old = operatorPod;
  await pulumiOk("config", "set", "appstack:image", "appstack:0.1.1", "--stack", stack);
  started = Date.now();
  await pulumiOk("up", "--yes", "--skip-preview", "--stack", stack);
  const deployment = await apps.readNamespacedDeployment({ name: "appstack-operator", namespace: operatorNamespace });
  assert.equal(deployment.spec?.template.spec?.containers[0]?.image, "appstack:0.1.1");
  assert.equal(deployment.spec?.strategy?.type, "Recreate");
  operatorPod = await eventually("the upgraded operator pod Ready", async () => {
    const pods = await podsOf(operatorNamespace, "app.kubernetes.io/name=appstack-operator");
    // Recreate: the old pod is gone before the new one is made.
    if (pods.some((pod) => pod.metadata?.uid === old.metadata?.uid)) return undefined;
    const [pod] = pods;
    return pods.length === 1 && pod && isReady(pod) ? pod : undefined;
  }, waitMs);
  figure(`upgrade to another build: pulumi up to the new operator pod Ready ${secondsSince(started)} s`);
  await assertReplaced(old, operatorPod);

  const metrics = await podFirstPassDone(operatorPod, await scraper(), upgraded.length);
  assert.equal(buildInfo(metrics), "0.1.1", metrics);
  assert.equal(counterTotal(metrics, "appstack_pulumi_operations_total"), 0, metrics);
  assert.deepEqual(await settled(stateFolder), before);
  const logs = await core.readNamespacedPodLog({ name: operatorPod.metadata!.name!, namespace: operatorNamespace });
  assert.doesNotMatch(logs, /"msg":"pulumi (up|refresh|preview)|"level":"error"/, logs);
  figure(`upgrade test ${secondsSince(started)} s from the upgrade's pulumi up`);
});

test("after the objects are deleted, `pulumi destroy` leaves nothing: namespace, CRDs, cluster roles and bindings, policies, volume", { skip, timeout: 900_000 }, async () => {
  await workloads.delete("App", namespace, "web");
  await workloads.delete("Memcached", namespace, "cache");
  await workloads.gone("App", namespace, "web", waitMs);
  await workloads.gone("Memcached", namespace, "cache", waitMs);
  const started = Date.now();
  await pulumiOk("destroy", "--yes", "--skip-preview", "--stack", stack);
  figure(`pulumi destroy ${secondsSince(started)} s`);
  const kc = loadKubeConfig(cluster!.kubeconfig);
  await assert.rejects(core.readNamespace({ name: operatorNamespace }), isNotFound);
  const crds = (await kc.makeApiClient(ApiextensionsV1Api).listCustomResourceDefinition()).items.filter((crd) => crd.spec.group === "appstack.dev");
  assert.deepEqual(crds.map((crd) => crd.metadata?.name), []);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  // Everything the install labelled, and anything named after appstack.
  const labelSelector = "app.kubernetes.io/part-of=appstack";
  const ours = (items: { metadata?: { name?: string; labels?: Record<string, string> } }[]) =>
    items.filter((item) => item.metadata?.labels?.["app.kubernetes.io/part-of"] === "appstack" || item.metadata?.name?.startsWith("appstack")).map((item) => item.metadata?.name);
  assert.deepEqual(ours((await rbac.listClusterRole()).items), []);
  assert.deepEqual(ours((await rbac.listClusterRoleBinding()).items), []);
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  assert.deepEqual(ours((await admission.listValidatingAdmissionPolicy()).items), []);
  assert.deepEqual(ours((await admission.listValidatingAdmissionPolicyBinding()).items), []);
  assert.deepEqual(ours((await rbac.listRoleBindingForAllNamespaces({ labelSelector })).items), []);
  // The state volume (local-path, reclaim policy Delete) goes after its claim.
  await eventually("no persistent volume left", async () => ((await core.listPersistentVolume()).items.length === 0 ? true : undefined), 120_000);
});

test("a watchNamespaces install: a new pod recovers the stack lock of a killed pod (gone), and deleting the watched namespace with an App in it completes", { skip, timeout: 900_000 }, async () => {
  const watched = "watched";
  await core.createNamespace({ body: { metadata: { name: watched } } });
  await pulumiOk("config", "set", "--path", "appstack:watchNamespaces[0]", watched, "--stack", stack);
  const started = Date.now();
  await pulumiOk("up", "--yes", "--skip-preview", "--stack", stack);
  operatorPod = await eventually("the scoped operator pod Ready", async () => {
    const [pod] = (await podsOf(operatorNamespace, "app.kubernetes.io/name=appstack-operator")).filter((p) => !p.metadata?.deletionTimestamp);
    return pod && isReady(pod) ? pod : undefined;
  }, waitMs);
  figure(`scoped install: pulumi up to operator pod Ready ${secondsSince(started)} s`);
  await workloads.create({ kind: "App", metadata: { name: "scoped", namespace: watched }, spec: { image: "localhost/appstack/http:0.1.0", replicas: 1, port: 80 } });
  await workloads.ready("App", watched, "scoped", waitMs);

  // The old pod killed (its container SIGKILLed, then the pod force-deleted) while its engine holds
  // the stack's lock inside an update (the Deployment's patch held): the lock names a pod that is gone.
  const hold = await holdWrites(cluster!, "deployments", "UPDATE", watched, "scoped", /^appstack$/);
  const old = operatorPod.metadata!.name!;
  try {
    await workloads.mergeSpec("App", watched, "scoped", { replicas: 2 });
    await hold.held;
    killOperatorContainer(operatorPod);
    await core.deleteNamespacedPod({ name: old, namespace: operatorNamespace, gracePeriodSeconds: 0 });
  } finally {
    await hold.release();
  }
  const recovering = Date.now();
  operatorPod = await eventually("a new scoped operator pod Ready", async () => {
    const [pod] = (await podsOf(operatorNamespace, "app.kubernetes.io/name=appstack-operator")).filter((p) => !p.metadata?.deletionTimestamp && p.metadata?.name !== old);
    return pod && isReady(pod) ? pod : undefined;
  }, waitMs);
  const app = await workloads.ready("App", watched, "scoped", waitMs);
  figure(`scoped install, pod killed mid-update: the App Ready with the change ${secondsSince(recovering)} s after the force delete`);
  assert.equal((app.spec as { replicas?: number }).replicas, 2);
  assert.equal(app.status?.observedGeneration, app.metadata.generation);
  assert.ok(!JSON.stringify(app.status?.conditions).includes("StackLocked"), JSON.stringify(app.status?.conditions));
  assert.equal((await apps.readNamespacedDeployment({ name: "scoped", namespace: watched })).spec?.replicas, 2);
  await eventually("two scoped pods Ready", async () => {
    const current = (await podsOf(watched, "app.kubernetes.io/instance=scoped")).filter((pod) => !pod.metadata?.deletionTimestamp);
    return current.length === 2 && current.every(isReady) ? true : undefined;
  }, 60_000);
  // The new pod broke the old one's lock on the peer-pod check (a get of the pod, in the operator's namespace).
  assert.equal(operatorPod.status?.containerStatuses?.[0]?.restartCount, 0);
  const logs = await core.readNamespacedPodLog({ name: operatorPod.metadata!.name!, namespace: operatorNamespace });
  const broken = logs.split("\n").find((line) => line.includes('"msg":"breaking a stale stack lock"') && line.includes(`"holderHost":"${old}"`));
  assert.ok(broken, logs);
  assert.match(broken, new RegExp(`"why":"pod ${operatorNamespace}/${old} no longer exists"`));

  const deleting = Date.now();
  await core.deleteNamespace({ name: watched });
  await eventually("the watched namespace gone", async () => {
    try {
      await core.readNamespace({ name: watched });
      return undefined;
    } catch (error) {
      return isNotFound(error) ? true : undefined;
    }
  }, waitMs);
  figure(`watched namespace with an App deleted in ${secondsSince(deleting)} s`);

  await pulumiOk("destroy", "--yes", "--skip-preview", "--stack", stack);
  await assert.rejects(core.readNamespace({ name: operatorNamespace }), isNotFound);
});

/** The operator pod Ready on `image`, once no pod named in `gone` is left. */
function operatorPodOn(image: string, gone: readonly string[] = []): Promise<V1Pod> {
  return eventually(`the operator pod Ready on ${image}`, async () => {
    const pods = await podsOf(operatorNamespace, "app.kubernetes.io/name=appstack-operator");
    if (pods.some((pod) => gone.includes(pod.metadata!.name!))) return undefined;
    const [pod] = pods;
    return pods.length === 1 && pod && isReady(pod) && pod.spec?.containers[0]?.image === image ? pod : undefined;
  }, waitMs);
}

test("the rendered install (`appstack manifests`, applied with `kubectl apply --server-side`) makes the same live objects as `pulumi up`; applying the next version's rendering upgrades it, its App untouched", { skip, timeout: 900_000 }, async () => {
  const kc = loadKubeConfig(cluster!.kubeconfig);
  // The first install's configuration; its passphrase from a Secret the person makes, of the name the install would give it.
  const flags = ["--passphrase-secret", "appstack-operator-passphrase", "--pod-start-timeout-seconds", String(podStartTimeoutSeconds)];
  let started = Date.now();
  const first = await renderedInstall(...flags, "--image", "appstack:0.1.0");
  figure(`appstack manifests rendered the install in ${secondsSince(started)} s`);
  const refs = manifestObjects(first);
  const made = pulumiInstall.filter((object) => !object.key.startsWith("Secret "));
  assert.deepEqual(refs.map((ref) => `${ref.kind} ${ref.namespace ?? ""}/${ref.name}`).sort((a, b) => a.localeCompare(b)), made.map((object) => object.key));
  assert.ok(!first.includes("in-cluster-passphrase") && !refs.some((ref) => ref.kind === "Secret"), "no Secret, no passphrase rendered");

  const file = join(stateDir, "appstack.yaml");
  writeFileSync(file, first);
  started = Date.now();
  await core.createNamespace({ body: { metadata: { name: operatorNamespace } } });
  await core.createNamespacedSecret({ namespace: operatorNamespace, body: { metadata: { name: "appstack-operator-passphrase" }, stringData: { passphrase: "rendered-install" } } });
  await kubectlApply(cluster!.kubeconfig, file);
  operatorPod = await operatorPodOn("appstack:0.1.0");
  figure(`rendered install: kubectl apply to operator pod Ready ${secondsSince(started)} s`);
  assert.deepEqual(await liveObjects(kc, refs), made);

  await workloads.create({ kind: "App", metadata: { name: "rendered", namespace }, spec: { image: "localhost/appstack/http:0.1.0", replicas: 1, port: 80 } });
  await workloads.ready("App", namespace, "rendered", waitMs);
  const before = await apps.readNamespacedDeployment({ name: "rendered", namespace });

  // The next version's rendering (the image of the upgrade test before), applied over it.
  writeFileSync(file, await renderedInstall(...flags, "--image", "appstack:0.1.1"));
  started = Date.now();
  await kubectlApply(cluster!.kubeconfig, file);
  operatorPod = await operatorPodOn("appstack:0.1.1", [operatorPod.metadata!.name!]);
  figure(`rendered install upgraded: kubectl apply to the new operator pod Ready ${secondsSince(started)} s`);
  const metrics = await podFirstPassDone(operatorPod, await scraper(), 1);
  assert.equal(buildInfo(metrics), "0.1.1", metrics);
  assert.equal(counterTotal(metrics, "appstack_pulumi_operations_total"), 0, metrics);
  const app = await workloads.ready("App", namespace, "rendered", waitMs);
  assert.equal(app.status?.observedGeneration, app.metadata.generation);
  const after = await apps.readNamespacedDeployment({ name: "rendered", namespace });
  assert.deepEqual([after.metadata?.uid, after.metadata?.generation], [before.metadata?.uid, before.metadata?.generation]);
});
