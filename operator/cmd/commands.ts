// The `appstack` command's verbs, in one table: what each runs, the usage text it prints, the
// flags it parses and its exit codes. cli.ts dispatches through it; the command line reference of
// docs/command-line.md is generated from it (operator/cmd/command-reference.ts), so the page and
// the usage texts come from the same source.
import { mkdirSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import type { ParseArgsOptionsConfig } from "node:util";
import { renderedCrds, yamlDir } from "../../components/crd-yaml.ts";
import { buildToolchain } from "../../toolchain/build.ts";
import { installHostPackages } from "../../toolchain/host-packages.ts";
import { clusterCommand, clusterLoadOptions, clusterUsage, defaultClusterName } from "../../toolchain/cluster/command.ts";
import { buildImages } from "../../toolchain/images/build.ts";
import { loadImages } from "../../toolchain/cluster/load.ts";
import { pulumiTools, toolPath } from "../../toolchain/tools.ts";
import { operatorOptions } from "../manager/config.ts";
import { kubeOptions, kindsInWords } from "./kube-flags.ts";
import { operatorUsage, runOperator } from "./main.ts";
import { previewOptions, previewUsage, runPreviewCli } from "./preview-cli.ts";
import { runPulumiCli } from "./pulumi-cli.ts";
import { manifestsFlags, manifestsUsage, runManifestsCli } from "./manifests-cli.ts";
import { newOptions, newUsage, runNewCli } from "./new-cli.ts";
import { runStacksCli } from "./stacks-cli.ts";
import { historyOptions, historyUsage, runHistoryCli } from "./history-cli.ts";
import { approveOptions, approveUsage, runApproveCli } from "./approve-cli.ts";
import { runStatusCli, statusUsage } from "./status-cli.ts";
import { suspendCli, suspendUsage } from "./suspend-cli.ts";
import { reconcileOptions, reconcileUsage, runReconcileCli } from "./reconcile-cli.ts";
import { runMainJob, runOptions, runUsage } from "./run.ts";
import { clusterInstallOptions, runClusterInstall } from "./cluster-install-cli.ts";
import { parseFlags, UsageError } from "./flags.ts";

export const appstackUsage = `usage: appstack <command>   (as a kubectl plugin: kubectl appstack <command>)
  run [--samples] [--real-node]
                         the main job: the operator in the foreground, on a local cluster
                         unless --kubeconfig=PATH or KUBECONFIG names one; Ctrl-C stops all
  preview -f FILE [--json] [--refresh]
                         what the operator would do with the objects in FILE, changing nothing;
                         exit 0 no changes, 2 changes, 1 error
  pulumi <args>          the pinned Pulumi CLI on this folder's install program (pulumi up, preview, destroy);
                         first builds, once, from Go modules: the CLI (or uses a pulumi on PATH at the pinned
                         version), its Node.js language host and the Kubernetes provider (cold: minutes,
                         docs/measurements.md#toolchain-build-times-and-disk)
  manifests --passphrase-secret NAME [flags] [-o FILE]
                         the install as YAML for kubectl apply --server-side (no credential in it);
                         first builds what \`pulumi\` builds, and nothing else
  new kind KIND [--group GROUP] [--dir DIR]
                         a kind file, DIR/<kind>.ts (default kinds/), from a template: a Deployment and
                         a Service; run with --kinds DIR (docs/writing-a-kind.md)
  stacks <args>          the pinned Pulumi CLI on the operator's own stacks (stack ls, stack export, ...),
                         with their secrets' key service; the state as the operator finds it
  kubectl <args>         the pinned kubectl, against KUBECONFIG
  status|get [-n NS|-A] [-o json|yaml]   every ${kindsInWords("and")}: ready, drifted, awaiting approval, stalled; exit 3 when one needs a person
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
                         --load: then loads them into the local cluster's real node (default: local);
                         needs buildah and mmdebstrap; cold: minutes (docs/measurements.md#images-build-times-and-sizes)
  crds                   write crds/yaml/ from the TypeScript CRD definitions
  cluster up|down|env|list [name] [--real-node]
                         manage a local control plane; --real-node (with up): a real node too;
                         up first builds, once, the whole toolchain (as \`toolchain\`; --real-node: the
                         node's binaries too), the longest cold build (docs/measurements.md#toolchain-build-times-and-disk)
  cluster load IMAGE... [--name NAME]
                         images into the local cluster's real node (archives, or images \`image\` built)
  cluster install [name] [--samples]
                         the operator as a pod on the real node, from the rendered install (as docs/install.md);
                         --samples: the real node's samples too, checked to serve by name from a pod`;

export interface Command {
  /** Runs it; returns its exit code, or nothing for success. A thrown error exits 1. */
  readonly run: (args: string[]) => Promise<number | void> | number | void;
  /** The usage text it prints with a wrong command line, when it has one of its own. */
  readonly usage?: string;
  /** The flags it parses. */
  readonly flags?: ParseArgsOptionsConfig;
  /** Flags it parses only to refuse, with a message that says why. */
  readonly refuses?: readonly string[];
  /** The program whose arguments, exit code and help it passes on, if it is one. */
  readonly passesOn?: string;
}

const imageOptions = { load: { type: "boolean" }, name: { type: "string" } } as const;

/** Each verb with what it runs, in the order of the usage text. */
export const commands: Readonly<Record<string, Command>> = {
  run: { run: runMainJob, usage: runUsage, flags: runOptions },
  preview: { run: runPreviewCli, usage: previewUsage, flags: previewOptions },
  pulumi: {
    run: (args) => {
      buildToolchain(undefined, pulumiTools);
      return runPulumiCli(args);
    },
    passesOn: "the pinned Pulumi CLI",
  },
  manifests: {
    run: (args) => runManifestsCli(args),
    usage: manifestsUsage,
    flags: manifestsFlags,
  },
  new: { run: runNewCli, usage: newUsage, flags: newOptions },
  stacks: {
    run: (args) => {
      buildToolchain(() => undefined);
      return runStacksCli(args);
    },
    passesOn: "the pinned Pulumi CLI",
  },
  kubectl: {
    run: (args) => {
      buildToolchain(() => undefined);
      return spawnSync(toolPath("kubectl"), args, { stdio: "inherit" }).status ?? 1;
    },
    passesOn: "the pinned kubectl",
  },
  status: { run: runStatusCli, usage: statusUsage, flags: kubeOptions },
  get: { run: runStatusCli, usage: statusUsage, flags: kubeOptions },
  history: { run: runHistoryCli, usage: historyUsage, flags: historyOptions, refuses: ["all-namespaces"] },
  approve: { run: runApproveCli, usage: approveUsage, flags: approveOptions, refuses: ["all-namespaces", "output"] },
  suspend: { run: suspendCli("suspend"), usage: suspendUsage("suspend"), flags: kubeOptions, refuses: ["all-namespaces", "output"] },
  resume: { run: suspendCli("resume"), usage: suspendUsage("resume"), flags: kubeOptions, refuses: ["all-namespaces", "output"] },
  reconcile: { run: runReconcileCli, usage: reconcileUsage, flags: reconcileOptions, refuses: ["all-namespaces", "output"] },
  operator: { run: runOperator, usage: operatorUsage, flags: operatorOptions },
  toolchain: {
    run: (args) => {
      noArguments("toolchain", args);
      installHostPackages((line) => console.error(line));
      buildToolchain();
    },
  },
  image: {
    run: async (args) => {
      const flags = parseFlags(args, imageOptions, appstackUsage);
      if (flags.name && !flags.load) throw new UsageError(`appstack image: --name names the cluster of --load\n${appstackUsage}`);
      const images = await buildImages();
      for (const image of images) console.log(`${image.name}\t${image.archiveName}\t${image.archive}`);
      if (flags.load) loadImages(flags.name ?? defaultClusterName, images.map((image) => image.archiveName), (line) => console.error(line));
    },
    flags: imageOptions,
  },
  crds: {
    run: (args) => {
      noArguments("crds", args);
      mkdirSync(yamlDir, { recursive: true });
      for (const [file, yaml] of renderedCrds()) writeFileSync(file, yaml);
    },
  },
  cluster: {
    run: (args) => (args[0] === "install" ? runClusterInstall(args.slice(1)) : clusterCommand(args)),
    usage: clusterUsage,
    flags: { ...clusterLoadOptions, "real-node": { type: "boolean" }, ...clusterInstallOptions },
  },
};

function noArguments(command: string, args: string[]): void {
  if (args.length) throw new UsageError(`appstack ${command} takes no arguments\n${appstackUsage}`);
}

/** The usage text of `verb`: its own, else its entry in appstackUsage. */
export function usageOf(verb: string): string {
  return commands[verb]?.usage ?? usageEntries().get(verb) ?? appstackUsage;
}

/** Each verb's entry in appstackUsage: its line and the indented lines that follow. */
export function usageEntries(): Map<string, string> {
  const entries = new Map<string, string>();
  const lines = appstackUsage.split("\n").slice(1);
  lines.forEach((line, index) => {
    const verbs = /^ {2}([a-z]+(?:\|[a-z]+)*)/.exec(line)?.[1]?.split("|") ?? [];
    const more = [...line.matchAll(/, ([a-z]+) app\//g)].map((match) => match[1]!);
    if (!verbs.length) return;
    const rest = lines.slice(index + 1);
    const end = rest.findIndex((next) => !/^ {3,}/.test(next));
    const entry = [line, ...rest.slice(0, end < 0 ? rest.length : end)].join("\n");
    for (const verb of [...verbs, ...more]) if (!entries.has(verb)) entries.set(verb, entry);
  });
  return entries;
}
