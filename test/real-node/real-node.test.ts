// A local cluster with a real node (ClusterOptions.realNode): pods really run (containerd, runc,
// the kubelet), Services answer through kube-proxy and by name through the cluster DNS (CoreDNS),
// claims bind, pods reach the API server, and a stop leaves nothing behind. It needs root and Debian's packages (test/helpers/real-node-gate.ts),
// and builds the kubelet and kube-proxy on first use.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { reapAbandonedClusters, startCluster, type LocalCluster } from "../../toolchain/cluster/cluster.ts";
import type { RealNodeState } from "../../toolchain/cluster/node.ts";
import { storageClassName } from "../../toolchain/cluster/node-storage.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { httpGet } from "../helpers/http.ts";
import { repoRoot } from "../../toolchain/tools.ts";
import { eventually } from "../helpers/cluster.ts";
import { processesMentioning } from "../helpers/proctree.ts";
import { realNodeSkip } from "../helpers/real-node-gate.ts";

const skip = realNodeSkip("node");
const enabled = skip === false;
const namespace = "default";
const podTimeoutMs = 120_000;

let cluster: LocalCluster | undefined;
let core: CoreV1Api;
let stopped = false;

function node(): RealNodeState {
  assert.ok(cluster?.realNode, "the cluster has a real node");
  return cluster.realNode;
}

before(async () => {
  if (!enabled) return;
  const started = Date.now();
  cluster = await startCluster({ realNode: true, exitOnSignal: true, log: (line) => console.error(line) });
  console.error(`real-node cluster started in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  core = loadKubeConfig(cluster.kubeconfig).makeApiClient(CoreV1Api);
});

after(async () => {
  if (cluster && !stopped) await cluster.stop();
});

/** A pod of one container; with a command it runs once (restartPolicy Never). `data`: a claim mounted at /data. */
function podOf(name: string, image: string, command?: string[], data?: string): V1Pod {
  return {
    metadata: { name, labels: { app: name } },
    spec: {
      restartPolicy: command ? "Never" : "Always",
      containers: [{
        name: "main", image, imagePullPolicy: "Never", ...(command ? { command } : {}),
        ...(data ? { volumeMounts: [{ name: "data", mountPath: "/data" }] } : {}),
      }],
      ...(data ? { volumes: [{ name: "data", persistentVolumeClaim: { claimName: data } }] } : {}),
    },
  };
}

async function podWhen(name: string, what: string, check: (pod: V1Pod) => boolean): Promise<V1Pod> {
  return eventually(`pod ${name} ${what}`, async () => {
    const pod = await core.readNamespacedPod({ name, namespace });
    return check(pod) ? pod : undefined;
  }, podTimeoutMs);
}

const isReady = (pod: V1Pod) => pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
const succeeded = (pod: V1Pod) => {
  if (pod.status?.phase === "Failed") throw new Error(`pod ${pod.metadata?.name} failed: ${JSON.stringify(pod.status.containerStatuses)}`);
  return pod.status?.phase === "Succeeded";
};


test("a pod on the pause image runs, and the kubelet reports it Ready with an address of the node's pod range", { skip }, async () => {
  await core.createNamespacedPod({ namespace, body: podOf("sandbox", node().images.pause.name) });
  const pod = await podWhen("sandbox", "Ready", isReady);
  assert.equal(pod.spec?.nodeName, node().nodeName);
  assert.equal(pod.status?.phase, "Running");
  assert.ok(pod.status?.containerStatuses?.[0]?.state?.running, JSON.stringify(pod.status?.containerStatuses));
  const prefix = node().network.podCidr.replace(/0\/24$/, "");
  assert.ok(pod.status?.podIP?.startsWith(prefix), `pod IP ${pod.status?.podIP} in ${node().network.podCidr}`);
});

test("a busybox httpd behind a ClusterIP Service answers from the host and from a pod, by address and by name through the cluster DNS, and pods reach the API server by name", { skip }, async () => {
  const busybox = node().images.busybox.name;
  const serve = "mkdir -p /www && echo hello-from-pod > /www/index.html && exec httpd -f -p 8080 -h /www";
  await core.createNamespacedPod({ namespace, body: podOf("web", busybox, ["/bin/sh", "-c", serve]) });
  const service = await core.createNamespacedService({
    namespace,
    body: { metadata: { name: "web" }, spec: { selector: { app: "web" }, ports: [{ port: 80, targetPort: 8080 }] } },
  });
  const clusterIp = service.spec?.clusterIP;
  assert.match(clusterIp ?? "", /^10\.96\./);
  await podWhen("web", "Running", (pod) => pod.status?.phase === "Running");
  // From the host, through kube-proxy's rules (they follow the endpoints; the answer is the fact to wait for).
  const answer = await eventually("the Service from the host", async () => {
    const response = await httpGet(`http://${clusterIp}/`).catch(() => undefined);
    return response?.status === 200 ? response : undefined;
  }, podTimeoutMs);
  assert.equal(answer.body.trim(), "hello-from-pod");
  // From a pod: the Service by its ClusterIP, then by its names through the cluster DNS (CoreDNS at
  // kube-system/kube-dns; `web` through the namespace's search domain), and the API server by name.
  const fetches = [`http://${clusterIp}/`, "http://web.default.svc/", "http://web/", "http://web.default.svc.cluster.local/"];
  const probe = `${fetches.map((url) => `echo ${url} && wget -q -O - ${url}`).join(" && ")} && wget -q --no-check-certificate -O - https://kubernetes.default.svc/version`;
  await core.createNamespacedPod({ namespace, body: podOf("client", busybox, ["/bin/sh", "-c", probe]) });
  const client = await podWhen("client", "Succeeded", succeeded);
  // The logs come from the kubelet through the API server (its kubelet client certificate).
  const logs = await core.readNamespacedPodLog({ name: "client", namespace });
  assert.equal(logs.match(/hello-from-pod/g)?.length, fetches.length, logs);
  assert.match(logs, /"gitVersion"/);
  // The kubelet gave the pod the cluster's nameserver and search path, not the machine's resolv.conf.
  const dns = await core.readNamespacedService({ name: "kube-dns", namespace: "kube-system" });
  assert.equal(dns.spec?.clusterIP, "10.96.0.10");
  const events = await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${client.metadata!.name!}` });
  assert.deepEqual(events.items.filter((event) => event.reason === "MissingClusterDNS").map((event) => event.message), []);
});

test("a claim of the default StorageClass binds to a local-path volume and a pod writes to it", { skip }, async () => {
  await core.createNamespacedPersistentVolumeClaim({
    namespace,
    body: { metadata: { name: "data" }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "10Mi" } } } },
  });
  await core.createNamespacedPod({ namespace, body: podOf("writer", node().images.busybox.name, ["/bin/sh", "-c", "echo written-by-pod > /data/file"], "data") });
  await podWhen("writer", "Succeeded", succeeded).catch(async (error: unknown) => {
    throw new Error(`${String(error)}\n${JSON.stringify((await core.readNamespacedPersistentVolumeClaim({ name: "data", namespace })).status)}`);
  });
  const claim = await core.readNamespacedPersistentVolumeClaim({ name: "data", namespace });
  assert.equal(claim.status?.phase, "Bound");
  assert.equal(claim.spec?.storageClassName, storageClassName);
  const volume = await core.readPersistentVolume({ name: claim.spec?.volumeName ?? "" });
  const path = volume.spec?.hostPath?.path ?? volume.spec?.local?.path ?? "";
  assert.ok(path.startsWith(node().paths.volumes), `volume ${path} under ${node().paths.volumes}`);
  assert.equal(readFileSync(join(path, "file"), "utf8"), "written-by-pod\n");
});

function assertNothingLeft(dir: string, realNode: RealNodeState): void {
  assert.deepEqual(processesMentioning(dir), []);
  assert.deepEqual(processesMentioning(realNode.paths.containerdSocket), []);
  assert.deepEqual(readdirSync("/sys/fs/cgroup").filter((hierarchy) => existsSync(join("/sys/fs/cgroup", hierarchy, realNode.cgroupRoot))), []);
  assert.deepEqual(readFileSync("/proc/self/mountinfo", "utf8").split("\n").filter((line) => line.includes(dir)), []);
  assert.equal(execFileSync("ip", ["-o", "link", "show"], { encoding: "utf8" }).includes(realNode.network.bridge), false);
  for (const save of ["iptables-save", "ip6tables-save"]) assert.deepEqual(execFileSync(save, { encoding: "utf8" }).split("\n").filter((line) => line.includes("KUBE-")), []);
  assert.ok(!existsSync(dir));
}

test("after stop no process, container, mount, cgroup, iptables chain or bridge of the node remains", { skip }, async () => {
  const { dir } = cluster!;
  assert.ok(processesMentioning(dir).length >= 8, "containerd, kubelet, kube-proxy, CoreDNS, the provisioner and shims run");
  stopped = true;
  await cluster!.stop();
  assertNothingLeft(dir, node());
});

test("a cluster whose owner was killed (no exit handler ran) is taken apart, pods and all, by the next start's reaping", { skip, timeout: 240_000 }, async () => {
  const owner = spawn(process.execPath, ["--import", "tsx", join(repoRoot, "test/helpers/real-node-owner.ts")], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = once(owner, "exit");
  const ownerDied = exited.then(([code]) => Promise.reject(new Error(`the owner exited (${String(code)}) before its cluster was up`)));
  const [line] = (await Promise.race([once(createInterface({ input: owner.stdout }), "line"), ownerDied])) as [string];
  const orphan = JSON.parse(line) as { dir: string; realNode: RealNodeState };
  assert.ok(processesMentioning(orphan.realNode.paths.containerdSocket).length > 0, "a shim runs the orphan's pod");
  // It printed its line and now only waits: it is alive to receive this.
  owner.kill("SIGKILL");
  await exited;
  assert.ok(processesMentioning(orphan.dir).length >= 8, "the cluster outlives its owner");
  await reapAbandonedClusters();
  assertNothingLeft(orphan.dir, orphan.realNode);
});
