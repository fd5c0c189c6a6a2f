// The install's objects as the API server has them, for comparing two installs (`pulumi up` of the
// install program, and its rendering by `appstack manifests` applied with kubectl): what each
// object is, without what the server or the tool that applied it adds (status, annotations,
// managed fields, the volume a claim happened to bind, Pulumi's managed-by label).
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { KubernetesObjectApi, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import yaml from "js-yaml";
import { repoRoot, toolPath } from "../../toolchain/tools.ts";

const execFileAsync = promisify(execFile);

/** Which object: enough to read it. */
export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
}

const key = (ref: ObjectRef) => `${ref.kind} ${ref.namespace ?? ""}/${ref.name}`;

/** The Kubernetes objects of a stack, from `pulumi stack export --file`'s output. */
export function stackObjects(exportFile: string): ObjectRef[] {
  const state = JSON.parse(readFileSync(exportFile, "utf8")) as { deployment: { resources?: { type: string; outputs?: { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } } }[] } };
  return (state.deployment.resources ?? []).filter((resource) => resource.type.startsWith("kubernetes:") && resource.outputs?.kind).map(({ outputs }) => ({
    apiVersion: outputs!.apiVersion!,
    kind: outputs!.kind!,
    name: outputs!.metadata!.name!,
    ...(outputs!.metadata!.namespace ? { namespace: outputs!.metadata!.namespace } : {}),
  }));
}

/** The objects of a multi-document YAML file. */
export function manifestObjects(text: string): ObjectRef[] {
  return (yaml.loadAll(text) as KubernetesObject[]).map((object) => ({
    apiVersion: object.apiVersion!,
    kind: object.kind!,
    name: object.metadata!.name!,
    ...(object.metadata?.namespace ? { namespace: object.metadata.namespace } : {}),
  }));
}

/** Each object as the API server has it now, keyed and stripped of what the applying tool or the server adds; sorted. */
export async function liveObjects(kc: KubeConfig, refs: readonly ObjectRef[]): Promise<{ key: string; labels: Record<string, string>; body: Record<string, unknown> }[]> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const objects = await Promise.all(refs.map(async (ref) => {
    const live = await api.read({ apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, ...(ref.namespace ? { namespace: ref.namespace } : {}) } });
    const { metadata, status: _status, ...body } = live as KubernetesObject & { status?: unknown; spec?: { volumeName?: string } };
    const labels = { ...metadata?.labels };
    delete labels["app.kubernetes.io/managed-by"];
    // Which volume a claim bound is the provisioner's choice.
    if (ref.kind === "PersistentVolumeClaim") delete (body as { spec?: { volumeName?: string } }).spec?.volumeName;
    return { key: key(ref), labels, body };
  }));
  return objects.sort((a, b) => a.key.localeCompare(b.key));
}

/** `appstack manifests ARGS`' YAML. */
export async function renderedInstall(...args: string[]): Promise<string> {
  const { stdout } = await execFileAsync(process.execPath, [join(repoRoot, "operator/cmd/appstack.mjs"), "manifests", ...args], { cwd: repoRoot, encoding: "utf8", timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

/** `kubectl apply --server-side -f FILE`, as a person installs from the rendered YAML. */
export async function kubectlApply(kubeconfig: string, file: string): Promise<string> {
  const { stdout } = await execFileAsync(toolPath("kubectl"), [`--kubeconfig=${kubeconfig}`, "apply", "--server-side", "-f", file], { encoding: "utf8", timeout: 120_000 });
  return stdout;
}
