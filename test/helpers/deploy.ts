// The committed install (deploy/) against what the install program renders now: the render, the
// pinned kubectl's Kustomize, and the objects keyed by kind, namespace and name, since Kustomize
// orders them its own way.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import yaml from "js-yaml";
import { repoRoot, toolPath } from "../../toolchain/tools.ts";

export type Manifest = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; spec?: Record<string, unknown> };

/** What `npm run deploy-yaml` renders deploy/appstack.yaml with: the install's defaults, and the Secret docs/install.md makes. */
export const deployArgs = ["--passphrase-secret", "appstack-credentials"] as const;

/** The command that writes deploy/'s rendered files again. */
export const regenerate = "npm run deploy-yaml";

/** `appstack manifests ARGS`, rendered into `folder` (its temporary folders there too); its text. */
export function renderInstall(folder: string, args: readonly string[]): string {
  const output = join(folder, "appstack.yaml");
  const result = spawnSync(process.execPath, [join(repoRoot, "operator/cmd/appstack.mjs"), "manifests", ...args, "-o", output], {
    cwd: repoRoot,
    encoding: "utf8",
    env: { ...process.env, KUBECONFIG: "/nonexistent", TMPDIR: folder },
  });
  if (result.status !== 0) throw new Error(`appstack manifests ${args.join(" ")} failed (exit ${result.status}):\n${result.stderr}`);
  return readFileSync(output, "utf8");
}

/** `kubectl kustomize FOLDER` with the pinned kubectl: Kustomize built in, no other binary. */
export function kustomize(folder: string): string {
  const result = spawnSync(toolPath("kubectl"), ["kustomize", folder], { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`kubectl kustomize ${folder} failed (exit ${result.status}):\n${result.stderr}`);
  return result.stdout;
}

/** Each object of a YAML stream by `Kind namespace/name`. */
export function byName(text: string): Map<string, Manifest> {
  const objects = (yaml.loadAll(text) as (Manifest | null)[]).filter((object): object is Manifest => object !== null);
  return new Map(objects.map((object) => [`${object.kind} ${object.metadata.namespace ?? ""}/${object.metadata.name}`, object]));
}
