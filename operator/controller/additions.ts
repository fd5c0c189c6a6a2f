// Additions: what others set in a child's spec (edits.ts) where the manifest sets nothing, named
// against the manifest as compare.ts names its differences:
// `spec.template.spec.containers[app].env[EXTRA]: added by kubectl-set`. What the manifest does
// set is compared by value (compare.ts), whoever wrote it; what nobody's entry names (the API
// server's defaults, a mutating webhook's changes) is not anyone's addition. Pulumi cannot see an
// addition (its diff prunes the live object to the shape of its inputs): the repair removes it
// with a server-side apply of its own (children.ts), after the handover (handover.ts).
import type { V1ManagedFieldsEntry } from "@kubernetes/client-node";
import { itemKey, segment } from "./compare.ts";
import { fieldsOf, isApplyOf, isFieldSet, isOthersEdit, splitEdit, type FieldSet } from "./edits.ts";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `k:{"containerPort":9090,"protocol":"TCP"}` as `[containerPort=9090,protocol=TCP]`, `k:{"name":"EXTRA"}` as `[EXTRA]`. */
function keyLabel(key: Record<string, unknown>): string {
  const entries = Object.entries(key);
  if (typeof key["name"] === "string") return `[${key["name"]}]`;
  return `[${entries.map(([k, v]) => `${k}=${String(v)}`).join(",")}]`;
}

/** The manifest's node that a fieldsV1 key names under `node`, and how a path shows it; undefined node: the manifest has none. */
function step(node: unknown, key: string): { node: unknown; label: string } {
  const kind = key.slice(0, 2);
  const rest = key.slice(2);
  if (kind === "f:") return { node: isRecord(node) ? node[rest] : undefined, label: segment(rest) };
  const items = Array.isArray(node) ? (node as unknown[]) : [];
  if (kind === "k:") {
    const wanted = JSON.parse(rest) as Record<string, unknown>;
    const item = items.find((candidate) => isRecord(candidate) && Object.entries(wanted).every(([k, v]) => candidate[k] === v));
    const name = item === undefined ? undefined : itemKey(item);
    return { node: item, label: name === undefined ? keyLabel(wanted) : `[${name}]` };
  }
  if (kind === "v:") return { node: items.find((candidate) => JSON.stringify(candidate) === rest), label: `[${rest}]` };
  if (kind === "i:") return { node: items[Number(rest)], label: `[${rest}]` };
  return { node: undefined, label: `[${key}]` };
}

/**
 * The paths in `fields` the manifest lacks, each as precise as the field set says: an added list
 * item whole (a container, an env var), else each leaf (`strategy.rollingUpdate.maxSurge`, not the
 * whole defaulted `strategy`).
 */
function missingPaths(fields: FieldSet, manifest: unknown, path: string): string[] {
  return Object.entries(fields).flatMap(([key, inner]) => {
    if (key === ".") return [];
    const { node, label } = step(manifest, key);
    const here = `${path}${label}`.replace(/^\./, "");
    const children = isFieldSet(inner) ? Object.keys(inner).filter((k) => k !== ".") : [];
    if (node !== undefined && node !== null) return children.length ? missingPaths(inner as FieldSet, node, here) : [];
    if (!key.startsWith("f:") || !children.length) return [here];
    return missingPaths(inner as FieldSet, undefined, here);
  });
}

/** How a line names what appstack owns beyond its manifest: handed over by a repair (or left by an older manifest), removed by its next apply. */
export const ownedLeftover = "added, owned by appstack until removed";

/**
 * What others (not `manager`, not the cluster's controllers) added to the spec `manifest` renders,
 * one line each: `<path>: added by <manager>[, <manager>]`. Also what `manager`'s own apply entry
 * owns beyond the manifest (`<path>: added, owned by appstack until removed`): a repair hands an
 * addition over before it removes it, and must not lose sight of it in between.
 */
export function additions(manifest: unknown, entries: readonly V1ManagedFieldsEntry[], manager: string): string[] {
  const byPath = new Map<string, Set<string>>();
  const leftovers = new Set<string>();
  for (const entry of entries) {
    if (isApplyOf(entry, manager)) {
      for (const path of missingPaths(splitEdit(fieldsOf(entry)).spec, manifest, "")) leftovers.add(path);
    } else if (isOthersEdit(entry, manager)) {
      for (const path of missingPaths(splitEdit(fieldsOf(entry)).spec, manifest, "")) {
        byPath.set(path, (byPath.get(path) ?? new Set()).add(entry.manager ?? "an unnamed manager"));
      }
    }
  }
  const added = [...byPath].map(([path, managers]) => `${path}: added by ${[...managers].join(", ")}`);
  return [...added, ...[...leftovers].filter((path) => !byPath.has(path)).map((path) => `${path}: ${ownedLeftover}`)];
}
