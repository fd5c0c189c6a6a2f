// The `appstack` command: wiring only. Each verb lives with the code it drives.
import "./preload.ts";
import { mkdirSync, writeFileSync } from "node:fs";
import { renderedCrds, yamlDir } from "../../components/crd-yaml.ts";
import { buildToolchain } from "../../toolchain/build.ts";
import { installHostPackages } from "../../toolchain/host-packages.ts";
import { clusterCommand } from "../../toolchain/cluster/command.ts";
import { buildImages } from "../../toolchain/images/build.ts";
import { spawnSync } from "node:child_process";
import { toolPath } from "../../toolchain/tools.ts";
import { runOperator } from "./main.ts";
import { runPreviewCli } from "./preview-cli.ts";
import { runPulumiCli } from "./pulumi-cli.ts";
import { runManifestsCli } from "./manifests-cli.ts";
import { runStacksCli } from "./stacks-cli.ts";
import { runHistoryCli } from "./history-cli.ts";
import { runApproveCli } from "./approve-cli.ts";
import { runStatusCli } from "./status-cli.ts";
import { suspendCli } from "./suspend-cli.ts";
import { runReconcileCli } from "./reconcile-cli.ts";
import { runMainJob } from "./run.ts";
import { runClusterInstall } from "./cluster-install-cli.ts";
import { loadImages } from "../../toolchain/cluster/load.ts";
import { defaultClusterName } from "../../toolchain/cluster/command.ts";
import { parseFlags, UsageError } from "./flags.ts";

const usage = `usage: appstack <command>   (as a kubectl plugin: kubectl appstack <command>)
  run [--samples] [--real-node]
                         the main job: the operator in the foreground, on a local cluster
                         unless --kubeconfig=PATH or KUBECONFIG names one; Ctrl-C stops all
  preview -f FILE [--json] [--refresh]
                         what the operator would do with the objects in FILE, changing nothing;
                         exit 0 no changes, 2 changes, 1 error
  pulumi <args>          the pinned Pulumi CLI on this folder's install program (pulumi up, preview, destroy)
  manifests --passphrase-secret NAME [flags] [-o FILE]
                         the install as YAML for kubectl apply --server-side (no credential in it)
  stacks <args>          the pinned Pulumi CLI on the operator's own stacks (stack ls, stack export, ...),
                         with their secrets' key service; the state as the operator finds it
  kubectl <args>         the pinned kubectl, against KUBECONFIG
  status|get [-n NS|-A] [-o json|yaml]   every App and Memcached: ready, drifted, awaiting approval, stalled; exit 3 when one needs a person
  history app/NAME [-o json|yaml]        what the operator did to one object, when and why (its stack's history)
  approve app/NAME [--yes]               shows the plan waiting for approval, asks, and approves exactly it
  suspend app/NAME, resume app/NAME      spec.suspend true (nothing is applied or repaired) or false (what changed is applied)
  reconcile app/NAME [--timeout=5m]      a refresh and pulumi up now; waits for the result (exit 0 Ready; 1 Stalled, held by dependsOn or deadline; 3 a plan waits)
  operator [flags]       the operator alone, against the configured cluster (in-cluster mode)
  toolchain              build the pinned toolchain from Go modules (cached); under CI=true as root,
                         first apt-get install the Debian packages the image and real-node tests need
  image [--load [--name NAME]]
                         build the operator image (Dockerfile) and the http and memcached workload images
                         with buildah on locally made base images; prints each image's OCI archive;
                         --load: then loads them into the local cluster's real node (default: local)
  crds                   write crds/yaml/ from the TypeScript CRD definitions
  cluster up|down|env|list [name] [--real-node]
                         manage a local control plane; --real-node (with up): a real node too
  cluster load IMAGE... [--name NAME]
                         images into the local cluster's real node (archives, or images \`image\` built)
  cluster install [name] [--samples]
                         the operator as a pod on the real node, from the rendered install (as docs/install.md);
                         --samples: the real node's samples too, checked to serve by name from a pod`;

/** Each verb with what it runs; a verb returns its exit code, or nothing for success. */
const commands: Record<string, (args: string[]) => Promise<number | void> | number | void> = {
  run: runMainJob,
  operator: runOperator,
  preview: runPreviewCli,
  status: runStatusCli,
  get: runStatusCli,
  history: runHistoryCli,
  approve: runApproveCli,
  suspend: suspendCli("suspend"),
  resume: suspendCli("resume"),
  reconcile: runReconcileCli,
  cluster: (args) => (args[0] === "install" ? runClusterInstall(args.slice(1)) : clusterCommand(args)),
  pulumi: (args) => {
    buildToolchain();
    return runPulumiCli(args);
  },
  manifests: (args) => {
    // On stderr, as for `pulumi`: the YAML alone goes to stdout.
    buildToolchain();
    return runManifestsCli(args);
  },
  stacks: (args) => {
    buildToolchain(() => undefined);
    return runStacksCli(args);
  },
  kubectl: (args) => {
    buildToolchain(() => undefined);
    return spawnSync(toolPath("kubectl"), args, { stdio: "inherit" }).status ?? 1;
  },
  toolchain: (args) => {
    noArguments("toolchain", args);
    installHostPackages((line) => console.error(line));
    buildToolchain();
  },
  image: async (args) => {
    const flags = parseFlags(args, { load: { type: "boolean" }, name: { type: "string" } }, usage);
    if (flags.name && !flags.load) throw new UsageError(`appstack image: --name names the cluster of --load\n${usage}`);
    const images = await buildImages();
    for (const image of images) console.log(`${image.name}\t${image.archiveName}\t${image.archive}`);
    if (flags.load) loadImages(flags.name ?? defaultClusterName, images.map((image) => image.archiveName), (line) => console.error(line));
  },
  crds: (args) => {
    noArguments("crds", args);
    mkdirSync(yamlDir, { recursive: true });
    for (const [file, yaml] of renderedCrds()) writeFileSync(file, yaml);
  },
};

function noArguments(command: string, args: string[]): void {
  if (args.length) throw new UsageError(`appstack ${command} takes no arguments\n${usage}`);
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "help" || command === "--help") {
    console.error(usage);
    return;
  }
  const run = commands[command];
  if (!run) throw new UsageError(`unknown command ${JSON.stringify(command)}\n${usage}`);
  const code = await run(rest);
  if (typeof code === "number") process.exitCode = code;
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
