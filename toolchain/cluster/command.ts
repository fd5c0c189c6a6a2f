// `appstack cluster up | down | env | list`: the local control plane as a command.
import { existsSync } from "node:fs";
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import { toolPath } from "../tools.ts";
import { buildToolchain } from "../build.ts";
import { clusterDir, readState, runningClusters, startCluster, stopClusterAt } from "./cluster.ts";
import { loadImages } from "./load.ts";
import { isRunning as componentRuns } from "./process.ts";

/** The cluster the commands mean when none is named: `local`, or APPSTACK_CLUSTER_NAME (as kind reads KIND_CLUSTER_NAME). */
export const defaultClusterName = process.env["APPSTACK_CLUSTER_NAME"] || "local";

export const clusterUsage = `usage: appstack cluster up|down|env|list [name] [--real-node]  (--real-node: with \`up\`, a real node: pods run)
       appstack cluster load IMAGE... [--name NAME]  images into the real node: archives (OCI or docker save), or images \`appstack image\` built
       appstack cluster install [name] [--samples]   the operator as a pod on the real node, from the rendered install; --samples: the real-node samples too`;

/** What a shell needs to use a local cluster: its kubeconfig, and the pinned kubectl on PATH. */
export function shellLines(kubeconfig: string, indent = "  "): string {
  return `${indent}export KUBECONFIG=${kubeconfig}\n${indent}export PATH=${dirname(toolPath("kubectl"))}:$PATH`;
}

function envLines(name: string): string {
  const state = readState(clusterDir(name));
  if (!state) throw new Error(`no cluster named ${name}: start it with \`npx appstack cluster up\``);
  return `${shellLines(state.kubeconfig, "")}\n# kubectl get nodes   (API server ${state.server})`;
}

export function isRunning(name: string): boolean {
  const state = readState(clusterDir(name));
  return state !== undefined && state.components.length > 0 && state.components.every((c) => componentRuns(c, state.dir));
}

export async function clusterUp(name: string, realNode = false): Promise<void> {
  if (isRunning(name)) {
    console.error(`cluster ${name} is already running`);
  } else {
    buildToolchain();
    if (existsSync(clusterDir(name))) await stopClusterAt(clusterDir(name));
    await startCluster({ name, detached: true, realNode, log: (line) => console.error(line) });
  }
  console.log(envLines(name));
}

export const clusterLoadOptions = { name: { type: "string" } } as const;

/** `cluster load IMAGE... [--name NAME]`: the images first, as `kind load` takes them. */
function loadCommand(args: string[]): void {
  const { values, positionals } = parseArgs({ args, options: clusterLoadOptions, allowPositionals: true });
  if (!positionals.length) throw new Error(`cluster load: name at least one image\n${clusterUsage}`);
  loadImages(values.name ?? defaultClusterName, positionals, (line) => console.error(line));
}

export async function clusterCommand(args: string[]): Promise<void> {
  if (args[0] === "load") return loadCommand(args.slice(1));
  const realNode = args.includes("--real-node");
  const [verb, name = defaultClusterName, ...extra] = args.filter((arg) => arg !== "--real-node");
  if (extra.length || (realNode && verb !== "up")) throw new Error(`unexpected arguments: ${extra.join(" ") || "--real-node"}\n${clusterUsage}`);
  switch (verb) {
    case "up":
      await clusterUp(name, realNode);
      return;
    case "down":
      await stopClusterAt(clusterDir(name));
      console.error(`cluster ${name}: stopped, ${clusterDir(name)} removed`);
      return;
    case "env":
      console.log(envLines(name));
      return;
    case "list":
      for (const state of runningClusters()) console.log(`${state.name}\t${state.server}\t${state.kubeconfig}`);
      return;
    default:
      throw new Error(clusterUsage);
  }
}
