// A process that owns a cluster with a real node and a running pod, then waits to be killed: the
// real-node test kills it with SIGKILL (no exit handler runs) to check what the next start reaps.
import { CoreV1Api } from "@kubernetes/client-node";
import { startCluster } from "../../toolchain/cluster/cluster.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { eventually } from "./cluster.ts";

const cluster = await startCluster({ realNode: true });
const core = loadKubeConfig(cluster.kubeconfig).makeApiClient(CoreV1Api);
const image = cluster.realNode!.images.pause.name;
await core.createNamespacedPod({ namespace: "default", body: { metadata: { name: "orphan" }, spec: { containers: [{ name: "main", image, imagePullPolicy: "Never" }] } } });
await eventually("pod orphan Running", async () => ((await core.readNamespacedPod({ name: "orphan", namespace: "default" })).status?.phase === "Running" ? true : undefined), 120_000);
process.stdout.write(`${JSON.stringify({ dir: cluster.dir, realNode: cluster.realNode })}\n`);
setInterval(() => undefined, 60_000);
