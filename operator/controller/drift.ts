// Whether an object needs Pulumi at all. After each successful `up` the operator records what it
// applied (the operator's program and the object's generation); the live children are compared
// with the manifests that program applies (children.ts) on every reconcile, from the watch cache.
// A reconcile that finds the same record and no difference starts no Pulumi process; a difference
// is drift, repaired with refresh and up (or previewed), whenever and however it was made.
import { createHash } from "node:crypto";
import type { Workload, WorkloadKind } from "../../crds/types.ts";
import { kindProgramVersion } from "../../components/kinds.ts";
import { canonicalJson } from "../base/canonical-json.ts";

/** Bumped when the program's output changes for an unchanged spec, so that every object is applied anew. */
export const programVersion = "4";

/**
 * The program version `kind`'s objects are applied with: appstack's, and after a `+` the kind's
 * own (kinds.ts kindProgramVersion: its kind file's source, its programVersion) for a kind that has
 * one, so that editing a kind file applies its objects anew. App and Memcached have none: theirs
 * is appstack's alone, as it was before kinds had versions, so an upgrade applies nothing anew.
 */
export function programVersionOf(kind: WorkloadKind): string {
  const own = kindProgramVersion(kind);
  return own === undefined ? programVersion : `${programVersion}+${own}`;
}

/** appstack's own part of a program version (programVersionOf). */
const operatorPart = (version: string) => version.split("+")[0];

export interface Applied {
  readonly programVersion: string;
  readonly generation: number;
  /** specDigest() of the spec applied; absent in records written before it was kept. */
  readonly spec?: string;
}

/**
 * What the children are made from, as a digest: the spec without `suspend`, `dependsOn` and
 * `deletionPolicy`, which change when or how the operator acts, not what it applies. Two generations
 * of the same digest apply the same.
 */
export function specDigest<S extends Workload["spec"]>(spec: S): string {
  return createHash("sha256").update(canonicalJson({ ...spec, suspend: undefined, dependsOn: undefined, deletionPolicy: undefined })).digest("hex").slice(0, 16);
}

/**
 * The record as it stands for the object's generation now: a newer generation whose spec differs
 * from the applied one only in `suspend`, `dependsOn` or `deletionPolicy` is applied as well, with
 * no Pulumi run (so that suspending or resuming an applied object, or changing what it waits for or
 * what its deletion does, leaves it applied, and its status current).
 */
export function appliedNow(applied: Applied | undefined, generation: number, spec: string, program: string): Applied | undefined {
  if (!applied || applied.generation === generation || applied.spec !== spec || applied.programVersion !== program) return applied;
  return { ...applied, generation };
}

export type Decision =
  | { action: "none" }
  /**
   * A new spec (or program) to apply; `refresh` when the stack's record of the cluster cannot be
   * trusted. `requested`: the value of a reconcile request (reconcile-request.ts) this run handles.
   */
  | { action: "apply"; reason: string; refresh: boolean; cause: "created" | "spec" | "program" | "interrupted" | "requested"; requested?: string }
  /** Drift: the live children differ from what was applied. */
  | { action: "repair"; reason: string; requested?: string };

/** A decision that runs Pulumi. */
export type Pending = Exclude<Decision, { action: "none" }>;

/** Whether the engine refreshes its record of the cluster first: always before a repair. */
export function refreshes(decision: Pending): boolean {
  return decision.action === "repair" || decision.refresh;
}

export function encodeApplied(applied: Applied): string {
  return `v=${applied.programVersion};g=${applied.generation}${applied.spec ? `;s=${applied.spec}` : ""}`;
}

/** The record of `object`'s spec applied now by the operator's program. */
export function appliedRecord(object: Workload): string {
  return encodeApplied({ programVersion: programVersionOf(object.kind), generation: object.metadata.generation ?? 0, spec: specDigest(object.spec) });
}

/** The record; a record of an older format is read as no record (the object is applied anew). */
export function decodeApplied(text: string | undefined): Applied | undefined {
  const match = /^v=([^;]+);g=(\d+)(?:;s=([0-9a-f]+))?$/.exec(text ?? "");
  if (!match) return undefined;
  return { programVersion: match[1]!, generation: Number(match[2]), ...(match[3] ? { spec: match[3] } : {}) };
}

export interface DecisionInput {
  /** The program version of the object's kind now (programVersionOf). */
  readonly program: string;
  readonly generation: number;
  readonly applied: Applied | undefined;
  /** What differs between the live children and the manifests, one line each (missing children included). */
  readonly drift: readonly string[];
  /**
   * Whether the stack already holds state although this object has no record of an `up`: the
   * state may describe another object of the same name (deleted without its finalizer, restored
   * from a backup, another cluster) or an interrupted first update, and is refreshed before
   * anything is applied.
   */
  readonly orphanedState: boolean;
}

const maxReasonDifferences = 3;

/** The differences in one line: the first few, and how many more. */
export function describeDrift(drift: readonly string[]): string {
  const shown = drift.slice(0, maxReasonDifferences).join("; ");
  return drift.length > maxReasonDifferences ? `${shown}; and ${drift.length - maxReasonDifferences} more` : shown;
}

export function decide(input: DecisionInput): Decision {
  const { generation, applied, drift } = input;
  if (!applied) return { action: "apply", reason: input.orphanedState ? "never applied (the stack already records resources: refreshed first)" : "never applied", refresh: input.orphanedState, cause: "created" };
  if (applied.programVersion !== input.program) {
    // A kind file edited (or its programVersion bumped) under the same operator says so: the author's change, not appstack's.
    const reason = operatorPart(applied.programVersion) === operatorPart(input.program) ? "the kind's program changed (its kind file or its programVersion)" : "the operator's program changed";
    return { action: "apply", reason, refresh: drift.length > 0, cause: "program" };
  }
  if (applied.generation !== generation) return { action: "apply", reason: `spec changed (generation ${applied.generation} -> ${generation})`, refresh: false, cause: "spec" };
  if (drift.length) return { action: "repair", reason: `drift: ${describeDrift(drift)}` };
  return { action: "none" };
}

/**
 * What a preview was computed against: the operator's program, the spec's generation and what
 * differed in the live children. An approval is honoured only while this is unchanged, so a plan
 * is never applied to a spec or a cluster it was not made for.
 */
export function previewBasis(program: string, generation: number, drift: readonly string[]): string {
  // An addition handed over before the preview is named anew (additions.ts): the same addition.
  const same = drift.map((line) => line.replace(/: added\b.*$/, ": added"));
  const live = createHash("sha256").update(JSON.stringify([...same].sort())).digest("hex").slice(0, 16);
  return `v=${program};g=${generation};live=${live}`;
}
