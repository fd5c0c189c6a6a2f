// The main job (`npm start`, `appstack run`): with no cluster configured, start the local one and
// install the CRDs; then run the operator in the foreground until Ctrl-C, which stops the operator
// first and the local cluster after it.
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { approvalPolicyName } from "../../crds/approval.ts";
import { ownershipPolicyName } from "../../crds/ownership.ts";
import { shardLabelsPolicyName } from "../../crds/shard-labels.ts";
import { buildToolchain } from "../../toolchain/build.ts";
import { localClusterOf, startCluster, type LocalCluster } from "../../toolchain/cluster/cluster.ts";
import { shellLines } from "../../toolchain/cluster/command.ts";
import { loadImages } from "../../toolchain/cluster/load.ts";
import { buildImages } from "../../toolchain/images/build.ts";
import { engineBinaries, repoRoot } from "../../toolchain/tools.ts";
import { applyObjects, installApi, readManifests } from "../kube/apply.ts";
import { loadConfig, operatorFlagsUsage, operatorOptions } from "../manager/config.ts";
import { kubeClients } from "../kube/clients.ts";
import { createLogger } from "../base/log.ts";
import { startService } from "../manager/service.ts";
import { handleProgramErrors } from "../pulumi/program-errors.ts";
import { onStopSignals } from "../manager/signals.ts";
import { parseFlags, UsageError } from "./flags.ts";
import { logKindFolders } from "./kinds-option.ts";
import { installPluginBin } from "./plugin-bin.ts";
import { realNodeSamplesDir } from "./cluster-install-cli.ts";
import { customResourceDefinitions } from "../../components/kinds.ts";

export const samples = ["app.yaml", "memcached.yaml"].map((file) => join(repoRoot, "crds", "samples", file));

export const runUsage = `usage: appstack run [--samples] [--real-node] [--backend file|postgres] [--kinds DIR] [flags]
  the operator in the foreground, on a new local cluster unless --kubeconfig=PATH or KUBECONFIG
  names one; --samples also applies crds/samples/ (with --real-node, crds/samples/real-node/, whose
  images are built and loaded into the node); --real-node gives the local cluster a real node
  (pods run; needs root); --backend postgres keeps the stacks in a PostgreSQL server started beside
  the local cluster (docs/state-backends.md). Ctrl-C stops all, a second Ctrl-C at once.
${operatorFlagsUsage}`;

/**
 * The kubeconfig the user named, or undefined for a new local cluster. A kubeconfig of one of our
 * own local clusters that has stopped (an `export KUBECONFIG=...` left over from an earlier run)
 * also means a new local cluster: there is nothing else it could mean.
 */
function namedKubeconfig(given: string | undefined, say: (line: string) => void): string | undefined {
  if (!given) return undefined;
  const missing = given.split(":").filter((path) => path && !existsSync(path));
  if (!missing.length) return given;
  const stopped = missing.map(localClusterOf);
  if (stopped.every((name) => name !== undefined)) {
    say(`KUBECONFIG names ${missing.join(", ")}, the kubeconfig of local cluster ${stopped.join(", ")}, which has stopped; starting a new local cluster (\`unset KUBECONFIG\` to skip this note)`);
    return undefined;
  }
  throw new UsageError(`the kubeconfig ${missing.join(", ")} does not exist: name an existing one, or \`unset KUBECONFIG\` to run on a new local cluster`);
}

/** Whether `--backend` asks for the local cluster's PostgreSQL server; `elsewhere` is a kubeconfig or backend URL given, which rules it out. */
function postgresChosen(backend = "file", elsewhere: string | undefined): boolean {
  if (backend !== "file" && backend !== "postgres") throw new UsageError(`--backend is file or postgres, not ${JSON.stringify(backend)}`);
  if (backend === "postgres" && elsewhere !== undefined) throw new UsageError("--backend postgres starts a PostgreSQL server beside a new local cluster; with --kubeconfig, KUBECONFIG or --backend-url, give --backend-url=postgres://... instead");
  return backend === "postgres";
}

/** What to type in another terminal to use the local cluster, its stacks included (no secret printed: the files hold them). */
function clusterHints(cluster: LocalCluster, localState: string | undefined): string {
  // The state folder too, so that `npx appstack preview` and `npx appstack stacks` there use this operator's stacks.
  const stateLine = localState ? `\n  export APPSTACK_STATE_DIR=${localState}` : "";
  const backendLine = cluster.postgresUrl ? `\n  export APPSTACK_BACKEND_URL="$(cat ${join(cluster.dir, "postgres-url")})" APPSTACK_PASSPHRASE="$(cat ${join(cluster.dir, "passphrase")})"` : "";
  const pluginLine = `\n  export PATH=${installPluginBin(join(cluster.dir, "bin"))}:$PATH`;
  return `\nlocal cluster is up; in another terminal (kubectl is the pinned one, with the appstack plugin):\n${shellLines(cluster.kubeconfig)}${stateLine}${backendLine}${pluginLine}\n  kubectl get apps,memcacheds,deployments,pods -A\n  kubectl appstack status -A\n`;
}

/**
 * A backend other than a file one must be given a passphrase (config.ts); the local cluster's
 * PostgreSQL server lives and dies with the cluster, so a generated one (kept in the cluster's
 * folder) encrypts its stacks' secrets unless the environment names one.
 */
function localPassphrase(cluster: LocalCluster | undefined): Record<string, string> {
  if (!cluster?.postgresUrl) return {};
  const file = join(cluster.dir, "passphrase");
  if (!existsSync(file)) writeFileSync(file, randomBytes(24).toString("base64url"), { mode: 0o600 });
  return { APPSTACK_PASSPHRASE: readFileSync(file, "utf8") };
}

function localBackendUrl(cluster: LocalCluster | undefined): { "backend-url"?: string } {
  return cluster?.postgresUrl ? { "backend-url": cluster.postgresUrl } : {};
}

/**
 * The samples; a real node pulls nothing, so its samples (crds/samples/real-node/) run the http and
 * memcached images `appstack image` builds, built here if need be and loaded into the node.
 */
async function sampleFiles(cluster: LocalCluster | undefined, say: (line: string) => void): Promise<string[]> {
  if (!cluster?.realNode) return samples;
  const images = await buildImages(say, { only: ["http", "memcached"] });
  loadImages(cluster.name, images.map((image) => image.archiveName), say);
  return readdirSync(realNodeSamplesDir).filter((file) => file.endsWith(".yaml")).sort().map((file) => join(realNodeSamplesDir, file));
}

/** The operator's flags, and the local cluster's. */
export const runOptions = { ...operatorOptions, samples: { type: "boolean" }, "real-node": { type: "boolean" }, backend: { type: "string" } } as const;

export async function runMainJob(argv: readonly string[]): Promise<void> {
  const { samples: withSamples = false, "real-node": realNode = false, backend, ...flags } = parseFlags(argv, runOptions, runUsage);
  buildToolchain();
  const say = (line: string) => console.error(line);
  const kubeconfig = namedKubeconfig(flags.kubeconfig ?? process.env["KUBECONFIG"], say);
  const postgres = postgresChosen(backend, kubeconfig ?? flags["backend-url"]);
  let cluster: LocalCluster | undefined;
  if (!kubeconfig) {
    cluster = await startCluster({ name: `run-${process.pid}`, realNode, postgres, log: say });
    // Everything this process starts (the engines among them) sees the same cluster.
    process.env["KUBECONFIG"] = cluster.kubeconfig;
  }
  // The stacks describe the children of one cluster: a local cluster keeps them in its own folder
  // and takes them along when it stops, so the next run's new cluster starts with no stale state.
  const stateChosen = flags["state-dir"] !== undefined || process.env["APPSTACK_STATE_DIR"] !== undefined;
  const localState = cluster && !stateChosen ? join(cluster.dir, "appstack-state") : undefined;
  if (cluster) say(clusterHints(cluster, localState));
  const config = loadConfig({ ...flags, kubeconfig: cluster?.kubeconfig ?? kubeconfig, ...(localState ? { "state-dir": localState } : {}), ...localBackendUrl(cluster) }, { APPSTACK_LOG_FORMAT: "text", ...localPassphrase(cluster), ...process.env });
  const log = createLogger({ level: config.logLevel, format: config.logFormat, write: say });
  handleProgramErrors(log);
  logKindFolders(log);
  try {
    const clients = kubeClients(config.kubeconfig);
    await installApi(clients);
    // The shard labels' and the approval's policies name this process's user (the kubeconfig's) as the operator's.
    log.info("API installed", { crds: customResourceDefinitions().map((crd) => crd.metadata.name).join(", "), policies: `${ownershipPolicyName}, ${shardLabelsPolicyName}, ${approvalPolicyName}` });
    const operator = await startService(config, engineBinaries(), log);
    if (withSamples) {
      const files = await sampleFiles(cluster, say);
      await applyObjects(clients, files.flatMap(readManifests));
      log.info("samples applied", { files: files.map((file) => relative(repoRoot, file)).join(", ") });
    }
    await new Promise<void>((resolve) => {
      onStopSignals(() => {
        log.info("stopping: letting running operations finish, then the local cluster");
        operator.stop().then(resolve, resolve);
      }, log);
    });
  } finally {
    if (cluster) {
      await cluster.stop();
      say("local cluster stopped and removed");
    }
  }
}
