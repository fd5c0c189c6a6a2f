// What a preview says, as data: the engine's step events turned into one planned step per
// resource with its changed property paths, and counts by step. Both the operator's status.preview
// and `appstack preview --json` are made from it.
import type { EngineEvent } from "@pulumi/pulumi/automation/index.js";
import type { PreviewStep, StepCounts } from "../../crds/types.ts";

/** The engine reports a replacement as up to four steps on one resource; people see one. */
const replacementOps = new Set(["replace", "create-replacement", "delete-replaced", "discard-replaced"]);

/** Steps that change nothing in the cluster. */
const unchangedSteps = new Set(["same", "read", "refresh"]);

/** The root stack resource is the engine's bookkeeping, not something the program makes. */
const rootStackType = "pulumi:pulumi:Stack";

export interface PlannedChanges {
  readonly steps: PreviewStep[];
  readonly changes: StepCounts;
}

/** The resource's name: the last part of its URN (`urn:pulumi:<stack>::<project>::<type>::<name>`). */
function nameOf(urn: string): string {
  return urn.slice(urn.lastIndexOf("::") + 2);
}

/** Collects the planned steps from a preview's engine events (pass `onEvent` to the preview). */
export class StepCollector {
  private readonly byUrn = new Map<string, PreviewStep>();

  readonly onEvent = (event: EngineEvent): void => {
    const metadata = event.resourcePreEvent?.metadata;
    if (!metadata || metadata.type === rootStackType) return;
    const step = replacementOps.has(metadata.op) ? "replace" : metadata.op;
    const previous = this.byUrn.get(metadata.urn);
    if (previous?.step === "replace") return;
    const paths = Object.keys(metadata.detailedDiff ?? {});
    const changed = paths.length ? paths : (metadata.diffs ?? []);
    this.byUrn.set(metadata.urn, {
      type: metadata.type,
      name: nameOf(metadata.urn),
      step,
      ...(changed.length && step !== "create" ? { paths: [...changed].sort() } : {}),
    });
  };

  result(): PlannedChanges {
    const steps = [...this.byUrn.values()];
    const changes: StepCounts = {};
    for (const { step } of steps) changes[step] = (changes[step] ?? 0) + 1;
    return { steps, changes };
  }
}

export function hasChanges(changes: StepCounts): boolean {
  return Object.entries(changes).some(([step, count]) => !unchangedSteps.has(step) && count > 0);
}

const pastTense: Record<string, string> = { create: "created", update: "updated", delete: "deleted", replace: "replaced" };

/** "1 to create, 2 to update" for a plan, "1 created, 2 updated" for an operation done; or "no changes". */
export function describeChanges(changes: StepCounts | undefined, tense: "planned" | "done" = "planned"): string {
  const parts = Object.entries(changes ?? {})
    .filter(([step, count]) => !unchangedSteps.has(step) && count > 0)
    .map(([step, count]) => (tense === "planned" ? `${count} to ${step}` : `${count} ${pastTense[step] ?? step}`));
  return parts.length ? parts.join(", ") : "no changes";
}

/** "Deployment web: spec.replicas; Service web (create)": the changes in one line, for Events. */
export function describeSteps(steps: readonly PreviewStep[]): string {
  return steps
    .filter((step) => !unchangedSteps.has(step.step))
    .map((step) => {
      const kind = step.type.startsWith("pulumi:providers:") ? "provider" : step.type.slice(step.type.lastIndexOf(":") + 1);
      return step.paths?.length ? `${kind} ${step.name} (${step.step}: ${step.paths.join(", ")})` : `${kind} ${step.name} (${step.step})`;
    })
    .join("; ");
}
