// Edits by others, as managedFields record them. appstack owns the whole spec it renders (the pod
// template, the rollout fields, the Service's spec; what any other kind of child holds beside its
// metadata and status, such as a ConfigMap's data): a field there that anyone but appstack and
// the cluster's own controllers set is theirs to undo. The API server's defaults belong to nobody
// (no entry names them) and a mutating webhook's changes to the request that triggered them, so
// neither is ever an edit of someone else's on a child appstack applied. Metadata is shared: a
// label or annotation another tool adds stays its own.
import type { V1ManagedFieldsEntry } from "@kubernetes/client-node";

/** Their Updates (the revision annotation) are theirs; subresources (status, scale) are never edits of the spec. */
const clusterControllers = new Set(["kube-controller-manager", "kube-scheduler"]);

/**
 * Spec fields others may set without it being drift: the stamp `kubectl rollout restart` puts on
 * the pod template asks for new pods and changes nothing they run; undoing it would roll the
 * Deployment a second time.
 */
const exempt: readonly (readonly string[])[] = [["f:spec", "f:template", "f:metadata", "f:annotations", "f:kubectl.kubernetes.io/restartedAt"]];

/** A managedFields field set (fieldsV1): `f:<field>`, `k:<list key>`, `v:<set value>`, `i:<index>`, `.` for the node itself. */
export type FieldSet = Record<string, unknown>;

export function isFieldSet(value: unknown): value is FieldSet {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function fieldsOf(entry: V1ManagedFieldsEntry): FieldSet {
  return isFieldSet(entry.fieldsV1) ? entry.fieldsV1 : {};
}

/** The entry of `manager`'s own server-side apply (appstack's: what it applied). */
export function isApplyOf(entry: V1ManagedFieldsEntry, manager: string): boolean {
  return entry.manager === manager && entry.operation === "Apply" && !entry.subresource;
}

/** A write by someone other than `manager` and the cluster's controllers: kubectl edit, patch, set, rollout pause, another applier. */
export function isOthersEdit(entry: V1ManagedFieldsEntry, manager: string): boolean {
  return !entry.subresource && entry.manager !== manager && !clusterControllers.has(entry.manager ?? "");
}

/** The union of two field sets. */
export function unionOfFields(a: FieldSet, b: FieldSet): FieldSet {
  const union: FieldSet = { ...a };
  for (const [key, value] of Object.entries(b)) {
    const mine = union[key];
    union[key] = isFieldSet(mine) && isFieldSet(value) ? unionOfFields(mine, value) : value;
  }
  return union;
}

/** Whether a set names nothing but (at most) the node itself: `{}` or `{".": {}}`. */
function isBare(fields: FieldSet): boolean {
  return Object.keys(fields).every((key) => key === ".");
}

/**
 * `fields` without the leaf at `path`, dropping the parents it leaves bare: a map created for the
 * leaf alone (`{".": {}}`) goes with it, and an empty set would mean the parent itself.
 */
function without(fields: FieldSet, path: readonly string[]): FieldSet {
  const [head, ...tail] = path;
  if (head === undefined || !(head in fields)) return fields;
  const rest = { ...fields };
  const child = rest[head];
  if (!tail.length) delete rest[head];
  else if (isFieldSet(child)) {
    const pruned = without(child, tail);
    if (isBare(pruned)) delete rest[head];
    else rest[head] = pruned;
  }
  return rest;
}

/** Only the leaf at `path` of `fields`, with its parents (a parent map's own `.` included), if it has one. */
function only(fields: FieldSet, path: readonly string[]): FieldSet {
  const [head, ...tail] = path;
  if (head === undefined || !(head in fields)) return {};
  const child = fields[head];
  if (!tail.length) return { [head]: child };
  const inner = isFieldSet(child) ? only(child, tail) : {};
  if (!Object.keys(inner).length) return {};
  return { [head]: isFieldSet(child) && "." in child ? { ".": child["."], ...inner } : inner };
}

/** The top-level fields that are not what a child holds: its metadata is shared, its status the cluster's. */
const notContents = new Set(["f:metadata", "f:status", "."]);

/**
 * An edit's fields split in two: those in what appstack renders beyond metadata and status (a
 * Deployment's or a Service's spec, a ConfigMap's data, a Role's rules: drift, named, and handed to
 * appstack to undo) and the rest (metadata, and what is exempt), which stay the editor's.
 */
export function splitEdit(fields: FieldSet): { spec: FieldSet; rest: FieldSet } {
  let spec: FieldSet = Object.fromEntries(Object.entries(fields).filter(([key]) => !notContents.has(key)));
  let rest: FieldSet = Object.fromEntries(Object.entries(fields).filter(([key]) => notContents.has(key)));
  for (const path of exempt) {
    rest = unionOfFields(rest, only(spec, path));
    spec = without(spec, path);
  }
  return { spec, rest };
}
