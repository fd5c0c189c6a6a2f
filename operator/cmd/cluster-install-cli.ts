// `appstack cluster install [name] [--samples]`: the operator as a pod on a local cluster's real
// node, installed as docs/install.md tells a platform team to: the rendered install
// (`appstack manifests`), its namespace and passphrase Secret, `kubectl apply --server-side`, and
// the rollout waited for. Each step prints the command it stands for. With --samples, the real
// node's samples (crds/samples/real-node/, of the images `appstack image` builds) are applied and
// waited for, and a pod of the node checks that they serve by their cluster DNS names.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { clusterDir, readState, type ClusterState } from "../../toolchain/cluster/cluster.ts";
import { defaultClusterName, shellLines } from "../../toolchain/cluster/command.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { imageTags } from "../../toolchain/images/images.ts";
import { projectVersion } from "../../toolchain/images/recipes.ts";
import { repoRoot, toolPath } from "../../toolchain/tools.ts";
import { parseCommandLine, UsageError } from "./flags.ts";
import { runManifestsCli } from "./manifests-cli.ts";
import { installPluginBin } from "./plugin-bin.ts";

export const clusterInstallUsage = "usage: appstack cluster install [name] [--samples]";

const namespace = "appstack-system";
const passphraseSecret = "appstack-credentials";
export const realNodeSamplesDir = join(repoRoot, "crds", "samples", "real-node");
const waitTimeout = "300s";
const say = (line: string) => console.error(line);

export const clusterInstallOptions = { samples: { type: "boolean" } } as const;

export async function runClusterInstall(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, clusterInstallOptions, clusterInstallUsage);
  if (positionals.length > 1) throw new UsageError(`unexpected arguments: ${positionals.slice(1).join(" ")}\n${clusterInstallUsage}`);
  const name = positionals[0] ?? defaultClusterName;
  const state = readState(clusterDir(name));
  if (!state?.realNode) throw new Error(`cluster install: ${state ? `cluster ${name} has no real node` : `no cluster named ${name}`}; start one with \`npx appstack cluster up${name === defaultClusterName ? "" : ` ${name}`} --real-node\``);
  const image = `appstack:${projectVersion()}`;
  requireLoaded(state, imageTags("operator", projectVersion()).archiveName);

  const file = join(state.dir, "appstack.yaml");
  say(`$ npx appstack manifests --passphrase-secret ${passphraseSecret} --image ${image} -o ${file}`);
  const rendered = await runManifestsCli(["--passphrase-secret", passphraseSecret, "--image", image, "-o", file]);
  if (rendered !== 0) return rendered;
  await ensureCredentials(state.kubeconfig);
  kubectl(state, "apply", "--server-side", "-f", file);
  kubectl(state, "-n", namespace, "rollout", "status", "deployment/appstack-operator", `--timeout=${waitTimeout}`);
  if (values.samples) await installSamples(state);
  // The plugin on a PATH of the cluster's folder, as the main job puts it, so that the last line works as printed.
  const pluginBin = installPluginBin(join(state.dir, "bin"));
  console.log(`\nappstack runs as a pod on cluster ${name}; in a shell:\n${shellLines(state.kubeconfig)}\n  export PATH=${pluginBin}:$PATH\n  kubectl get pods -A\n  kubectl appstack status -A`);
  return 0;
}

/** The kubelet never pulls here: an image not in the node would leave the pod in ErrImageNeverPull or ImagePullBackOff. */
function requireLoaded(state: ClusterState, archiveName: string): void {
  const listing = spawnSync("ctr", ["--address", state.realNode!.paths.containerdSocket, "--namespace", "k8s.io", "images", "ls", "-q"], { encoding: "utf8", timeout: 30_000 });
  if (listing.status !== 0) throw new Error(`cluster install: cannot list the node's images: ${listing.stderr || listing.error?.message}`);
  if (!listing.stdout.split("\n").includes(archiveName)) {
    throw new Error(`cluster install: the node has no ${archiveName}; build and load it first: \`npx appstack image --load${state.name === defaultClusterName ? "" : ` --name ${state.name}`}\``);
  }
}

/**
 * The namespace and a passphrase Secret of 24 random bytes, made once: a second install keeps the
 * passphrase, without which the stacks' secrets could not be read again. Through the API, so that
 * the passphrase is on no command line.
 */
async function ensureCredentials(kubeconfig: string): Promise<void> {
  const core = loadKubeConfig(kubeconfig).makeApiClient(CoreV1Api);
  const exists = (read: () => Promise<unknown>) => read().then(() => true, (error: unknown) => {
    if ((error as { code?: number }).code === 404) return false;
    throw error;
  });
  if (!(await exists(() => core.readNamespace({ name: namespace })))) {
    say(`$ kubectl create namespace ${namespace}`);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
  }
  if (await exists(() => core.readNamespacedSecret({ name: passphraseSecret, namespace }))) {
    say(`secret ${namespace}/${passphraseSecret} exists: its passphrase is kept`);
    return;
  }
  say(`$ kubectl -n ${namespace} create secret generic ${passphraseSecret} --from-literal=passphrase="$(openssl rand -base64 24)"`);
  await core.createNamespacedSecret({ namespace, body: { metadata: { name: passphraseSecret }, stringData: { passphrase: randomBytes(24).toString("base64") } } });
}

/** The pinned kubectl against the cluster, its output shown; a failure ends the install. */
function kubectl(state: ClusterState, ...args: string[]): void {
  say(`$ kubectl ${args.join(" ")}`);
  const result = spawnSync(toolPath("kubectl"), [`--kubeconfig=${state.kubeconfig}`, ...args], { stdio: ["ignore", "inherit", "inherit"], timeout: 600_000 });
  if (result.status !== 0) throw new Error(`cluster install: kubectl ${args[0]} failed (${result.error?.message ?? `exit ${result.status}`})`);
}

async function installSamples(state: ClusterState): Promise<void> {
  kubectl(state, "apply", "-f", realNodeSamplesDir);
  kubectl(state, "wait", "--for=condition=Ready", "app/hello", "memcached/cache", `--timeout=${waitTimeout}`);
  const answers = await askByName(state);
  say(`from a pod: ${answers}`);
}

// Each answer is checked (grep fails on no match), so a pod that heard nothing fails.
const probeCommand = [
  "title=$(wget -q -O - http://hello.default.svc/ | grep -o '<title>[^<]*</title>')",
  'echo "http://hello.default.svc/ answers: $title"',
  "version=$(printf 'stats\\r\\nquit\\r\\n' | nc -w 5 cache.default.svc 11211 | grep 'STAT version' | tr -d '\\r')",
  'echo "cache.default.svc:11211 answers stats: $version"',
].join(" && ");

/** A busybox pod asks both samples by their Service names, through the cluster DNS; what it heard. */
async function askByName(state: ClusterState): Promise<string> {
  const core = loadKubeConfig(state.kubeconfig).makeApiClient(CoreV1Api);
  const name = `appstack-samples-check-${randomBytes(3).toString("hex")}`;
  const pod: V1Pod = {
    metadata: { name },
    spec: { restartPolicy: "Never", containers: [{ name: "check", image: state.realNode!.images.busybox.name, imagePullPolicy: "Never", command: ["/bin/sh", "-c", `set -o pipefail && ${probeCommand}`] }] },
  };
  await core.createNamespacedPod({ namespace: "default", body: pod });
  try {
    const { phase, logs } = await finished(core, name, 120_000);
    if (phase === "Failed") throw new Error(`cluster install: the samples do not answer by name from a pod:\n${logs}`);
    return logs.replace(/\n/g, "; ");
  } finally {
    await core.deleteNamespacedPod({ name, namespace: "default" }).catch(() => undefined);
  }
}

/** The pod's end (Succeeded or Failed) and its log, or an error past the deadline. */
async function finished(core: CoreV1Api, name: string, timeoutMs: number): Promise<{ phase: string; logs: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const phase = (await core.readNamespacedPod({ name, namespace: "default" })).status?.phase ?? "Pending";
    if (phase === "Succeeded" || phase === "Failed") return { phase, logs: (await core.readNamespacedPodLog({ name, namespace: "default" })).trim() };
    if (Date.now() > deadline) throw new Error(`cluster install: the check pod ${name} did not finish in ${timeoutMs / 1000} s (phase ${phase})`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
