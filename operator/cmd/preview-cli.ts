// `appstack preview -f app.yaml`: what the operator would do with these objects, done by the same
// program against the same cluster and stack state, without changing either. Exit codes as
// `terraform plan -detailed-exitcode`: 0 no changes, 1 error, 2 changes.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ApiextensionsV1Api, type KubernetesObject } from "@kubernetes/client-node";
import { type PreviewStep, type StepCounts, type Workload, type WorkloadKind } from "../../crds/types.ts";
import { apiVersionOfKind, groupOfKind, isWorkloadKind, pluralOf, resourceOf, workloadKinds } from "../../components/kinds.ts";
import { engineBinaries } from "../../toolchain/tools.ts";
import { readManifests } from "../kube/apply.ts";
import { loadConfig, operatorOptions, type OperatorConfig, type OperatorFlags } from "../manager/config.ts";
import { apiClient, briefError, isNotFound, keyOf, kubeClients, orUndefined, readWorkload, type KubeClients } from "../kube/clients.ts";
import { createLogger } from "../base/log.ts";
import { hasChanges } from "../pulumi/preview-steps.ts";
import { programFor } from "../pulumi/programs.ts";
import { stackName } from "../pulumi/stack-names.ts";
import { prepareWorkDir } from "../pulumi/stack-selection.ts";
import { StackDriver } from "../pulumi/stacks.ts";
import { StateIo } from "../pulumi/state-io.ts";
import { parseFlags, UsageError } from "./flags.ts";
import { kindsInWords } from "./kube-flags.ts";

export const previewUsage = `usage: appstack preview -f FILE [-f FILE ...] [--json] [--refresh] [--kubeconfig=PATH] [--state-dir=DIR | --backend-url=URL]
  previews ${kindsInWords("and")} objects against the cluster and the operator's stack state;
  changes nothing. Exit code 0: no changes, 2: changes, 1: error.`;

export const previewOptions = {
  filename: { type: "string", short: "f", multiple: true },
  json: { type: "boolean" },
  refresh: { type: "boolean" },
  kubeconfig: operatorOptions.kubeconfig,
  "state-dir": operatorOptions["state-dir"],
  "backend-url": operatorOptions["backend-url"],
} as const;

export interface ObjectPreview {
  readonly kind: WorkloadKind;
  readonly namespace: string;
  readonly name: string;
  readonly stack: string;
  /** No stack exists for the object yet: everything is a create. */
  readonly new: boolean;
  readonly changes: StepCounts;
  readonly steps: PreviewStep[];
}

interface Options {
  readonly files: string[];
  readonly json: boolean;
  readonly refresh: boolean;
}

function previewFlags(argv: readonly string[]): { options: Options; flags: OperatorFlags } {
  const { filename: files = [], json = false, refresh = false, ...flags } = parseFlags(argv, previewOptions, previewUsage);
  if (!files.length || files.includes("")) throw new UsageError(`name the objects to preview with -f FILE\n${previewUsage}`);
  return { options: { files, json, refresh }, flags };
}

function workloadsIn(files: readonly string[], defaultNamespace: string): Workload[] {
  return files.flatMap((file) => readManifests(file === "-" ? "/dev/stdin" : file)).map((object: KubernetesObject) => {
    if (!isWorkloadKind(object.kind) || object.apiVersion !== apiVersionOfKind(object.kind)) {
      throw new Error(`${object.kind ?? "an object"} ${object.metadata?.name ?? ""}: only ${workloadKinds().map((kind) => `${apiVersionOfKind(kind)} ${kind}`).join(", ")} can be previewed`);
    }
    if (!object.metadata?.name) throw new Error(`${object.kind} without metadata.name`);
    return { ...object, metadata: { ...object.metadata, namespace: object.metadata.namespace ?? defaultNamespace } } as Workload;
  });
}

/**
 * The object as the API server would store it, defaults and validation included, through a
 * server-side dry run: a replace of the live object's spec, or a create. Nothing is persisted.
 */
async function dryRun(clients: KubeClients, object: Workload): Promise<{ object: Workload; exists: boolean }> {
  const target = { ...resourceOf(object.kind), namespace: object.metadata.namespace };
  const live = await readWorkload(clients, keyOf(object));
  const body = live ? { ...live, spec: object.spec } : object;
  const result: unknown = live
    ? await clients.custom.replaceNamespacedCustomObject({ ...target, name: object.metadata.name, body, dryRun: "All" })
    : await clients.custom.createNamespacedCustomObject({ ...target, body, dryRun: "All" });
  return { object: result as Workload, exists: live !== undefined };
}

/** What a refused dry run means for the user: a missing API is named, with the command that installs it. */
async function explainRefusal(clients: KubeClients, kind: WorkloadKind, error: unknown): Promise<string> {
  if (!isNotFound(error)) return briefError(error);
  const crd = `${pluralOf(kind)}.${groupOfKind(kind)}`;
  const installed = await orUndefined(() => apiClient(clients.config, ApiextensionsV1Api).readCustomResourceDefinition({ name: crd })).catch(() => "unreadable");
  if (installed !== undefined) return briefError(error);
  return `the CRD ${crd} is not installed in this cluster; install appstack's API with \`npx appstack kubectl apply --server-side -f crds/yaml/\` (the operator's install, \`npx appstack pulumi up\`, and \`npm start\` on its local cluster do it too)`;
}

/**
 * Drivers over the configured backend, and over a throwaway one for objects that have no stack yet.
 * A local backend folder that does not exist holds no stack, and is not created by looking.
 */
async function drivers(config: OperatorConfig, scratch: string) {
  const log = createLogger({ level: "warn", format: "text", write: (line) => process.stderr.write(line + "\n") });
  const engine = { pulumiHome: join(scratch, "pulumi-home"), binaries: engineBinaries(), ...(config.kubeconfig ? { kubeconfig: config.kubeconfig } : {}) };
  const backendUnused = config.backendUrl.startsWith("file:") && !existsSync(fileURLToPath(config.backendUrl));
  const io = new StateIo(config.operationTimeoutMs);
  const configured = backendUnused ? undefined : new StackDriver({ ...engine, backendUrl: config.backendUrl, passphrase: config.passphrase, workDir: await prepareWorkDir(join(scratch, "configured"), io) }, log);
  const emptyBackend = pathToFileURL(mkdtempSync(join(scratch, "backend-"))).href;
  const empty = new StackDriver({ ...engine, backendUrl: emptyBackend, passphrase: "preview", workDir: await prepareWorkDir(join(scratch, "new"), io) }, log);
  return { configured, empty };
}

async function previewAll(options: Options, config: OperatorConfig, scratch: string): Promise<ObjectPreview[]> {
  const clients = kubeClients(config.kubeconfig);
  const defaultNamespace = clients.config.getContextObject(clients.config.getCurrentContext())?.namespace ?? "default";
  const { configured, empty } = await drivers(config, scratch);
  const results: ObjectPreview[] = [];
  for (const given of workloadsIn(options.files, defaultNamespace)) {
    const label = `${given.kind} ${given.metadata.namespace}/${given.metadata.name}`;
    const { object, exists } = await dryRun(clients, given).catch(async (error: unknown) => {
      throw new Error(`${label}: ${await explainRefusal(clients, given.kind, error)}`);
    });
    const stack = stackName(object.kind, object.metadata.namespace, object.metadata.name);
    const isNew = !configured || !(await configured.exists(stack));
    const driver = isNew ? empty : configured;
    // A stack with no object in the cluster is an earlier object's: only a refresh tells what of it is left.
    const stale = !isNew && !exists;
    if (!options.json) process.stdout.write(`\n${label} (stack ${stack}${isNew ? ", not created yet" : stale ? ", left by an earlier object: refreshed" : ""})\n`);
    const onOutput = options.json ? () => undefined : (out: string) => process.stdout.write(out);
    const planned = await driver.preview(stack, programFor(object), { refresh: options.refresh || stale, onOutput });
    results.push({ kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name, stack, new: isNew, changes: planned.changes, steps: planned.steps });
  }
  return results;
}

export async function runPreviewCli(argv: readonly string[]): Promise<number> {
  const scratch = mkdtempSync(join(tmpdir(), "appstack-preview-"));
  try {
    const { options, flags } = previewFlags(argv);
    // Read-only: a preview creates no state folder and no passphrase file.
    const results = await previewAll(options, loadConfig(flags, process.env, { readOnly: true }), scratch);
    const changed = results.some((result) => hasChanges(result.changes));
    if (options.json) process.stdout.write(JSON.stringify({ changes: changed, objects: results }, null, 2) + "\n");
    return changed ? 2 : 0;
  } catch (error) {
    process.stderr.write(`appstack preview: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
