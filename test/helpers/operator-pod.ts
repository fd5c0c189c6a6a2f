// The operator running as a pod on the real node, seen from the host: whether it has been through
// every object once (its /metrics at the pod's IP, over HTTPS with a scraper's token), and how many updates its stacks record (the
// file backend's history entries on its state volume, read without writing anything there).
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { V1PersistentVolume, V1Pod } from "@kubernetes/client-node";
import type { WorkloadKind } from "../../crds/types.ts";
import { projectName, stackName } from "../../operator/pulumi/stack-names.ts";
import { eventually } from "./cluster.ts";
import { counterTotal, metricValue } from "./operator.ts";
import { httpsGet } from "./metrics-reader.ts";

/** The install's metrics port (components/install.ts), where /metrics is served over HTTPS. */
const metricsPort = 8443;

/**
 * The operator pod's metrics, from the host through the node's bridge. `token`: a ServiceAccount's
 * bound to the install's metrics-reader ClusterRole (metrics-reader.ts scraperToken).
 */
export async function podMetrics(pod: V1Pod, token: string): Promise<string> {
  const response = await httpsGet(`https://${pod.status!.podIP!}:${metricsPort}/metrics`, token);
  if (response.status !== 200) throw new Error(`/metrics of ${pod.metadata?.name}: HTTP ${response.status}`);
  return response.body;
}

/**
 * Until the operator pod has been through every object once: at least `objects` reconciles and
 * nothing queued or running (test/helpers/operator.ts firstPassDone, for a pod). Returns its metrics.
 */
export function podFirstPassDone(pod: V1Pod, token: string, objects: number, timeoutMs = 120_000): Promise<string> {
  return eventually(`the first pass of operator pod ${pod.metadata?.name} over ${objects} objects`, async () => {
    const metrics = await podMetrics(pod, token).catch(() => undefined);
    if (!metrics) return undefined;
    const idle = metricValue(metrics, "appstack_queue_depth") === 0 && metricValue(metrics, "appstack_queue_active") === 0;
    return idle && counterTotal(metrics, "appstack_reconcile_total") >= objects ? metrics : undefined;
  }, timeoutMs);
}

/** The host folder of a local-path (or any hostPath/local) volume. */
export function volumeHostPath(volume: V1PersistentVolume): string {
  const path = volume.spec?.hostPath?.path ?? volume.spec?.local?.path;
  if (!path) throw new Error(`volume ${volume.metadata?.name} has no host path: ${JSON.stringify(volume.spec)}`);
  return path;
}

/**
 * The updates (up, refresh, destroy) one object's stack records: the file backend keeps one
 * history entry per update under backend/.pulumi/history/<project>/<stack>/ of the state folder
 * (operator/pulumi/deleted-history.ts reads the same). Counted as files: `appstack history` would
 * run the Pulumi CLI as root in the operator's (uid 65532) folder.
 */
export function stackUpdateCount(stateFolder: string, kind: WorkloadKind, namespace: string, name: string): number {
  const folder = join(stateFolder, "backend", ".pulumi", "history", projectName, stackName(kind, namespace, name));
  if (!existsSync(folder)) throw new Error(`no history folder ${folder}`);
  return readdirSync(folder).filter((file) => file.endsWith(".history.json")).length;
}
