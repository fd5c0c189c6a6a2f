// The main job (`npm start`, `appstack run`): with no cluster configured, start the local one and
// install the CRDs; then run the operator in the foreground until Ctrl-C, which stops everything.
import { join } from "node:path";
import { ownershipPolicyName } from "../../crds/ownership.ts";
import { buildToolchain } from "../../toolchain/build.ts";
import { startCluster, type LocalCluster } from "../../toolchain/cluster/cluster.ts";
import { repoRoot } from "../../toolchain/tools.ts";
import { applyObjects, installApi, readManifests } from "../kube/apply.ts";
import { loadConfig } from "../manager/config.ts";
import { kubeClients } from "../kube/clients.ts";
import { createLogger } from "../manager/log.ts";
import { startService } from "../manager/service.ts";
import { onStopSignals } from "../manager/signals.ts";

export const samples = ["app.yaml", "memcached.yaml"].map((file) => join(repoRoot, "crds", "samples", file));

export async function runMainJob(argv: readonly string[]): Promise<void> {
  const withSamples = argv.includes("--samples");
  buildToolchain();
  const local = !argv.some((arg) => arg.startsWith("--kubeconfig=")) && !process.env["KUBECONFIG"];
  let cluster: LocalCluster | undefined;
  if (local) {
    cluster = await startCluster({ name: `run-${process.pid}`, log: (line) => console.error(line) });
    console.error(`\nlocal cluster is up; in another terminal:\n  export KUBECONFIG=${cluster.kubeconfig}\n  kubectl get apps,memcacheds,deployments,pods -A\n`);
  }
  // The stacks describe the children of one cluster: a local cluster keeps them in its own folder
  // and takes them along when it stops, so the next run's new cluster starts with no stale state.
  const stateChosen = argv.some((arg) => arg.startsWith("--state-dir=")) || process.env["APPSTACK_STATE_DIR"] !== undefined;
  const localArgs = cluster ? [`--kubeconfig=${cluster.kubeconfig}`, ...(stateChosen ? [] : [`--state-dir=${join(cluster.dir, "appstack-state")}`])] : [];
  const config = loadConfig([...argv, ...localArgs], { APPSTACK_LOG_FORMAT: "text", ...process.env });
  const log = createLogger({ level: config.logLevel, format: config.logFormat, write: (line) => console.error(line) });
  try {
    const clients = kubeClients(config.kubeconfig);
    await installApi(clients);
    log.info("API installed", { crds: "apps.appstack.dev, memcacheds.appstack.dev", policy: ownershipPolicyName });
    const operator = await startService(config, log);
    if (withSamples) {
      await applyObjects(clients, samples.flatMap(readManifests));
      log.info("samples applied", { files: "crds/samples/app.yaml, crds/samples/memcached.yaml" });
    }
    await new Promise<void>((resolve) => {
      onStopSignals(() => {
        log.info("stopping: letting running operations finish");
        operator.stop().then(resolve, resolve);
      }, log);
    });
  } finally {
    if (cluster) {
      await cluster.stop();
      console.error("local cluster stopped and removed");
    }
  }
}
