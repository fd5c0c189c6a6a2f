// What a repair removes that Pulumi cannot see (additions.ts), as steps of the preview a person
// approves under updatePolicy Preview: an update of each child with additions, naming their paths.
// Without them the plan would say "no changes" while the repair it approves removes fields.
import { childKindNamed } from "../../components/kinds.ts";
import type { PreviewStep } from "../../crds/types.ts";
import type { PlannedChanges } from "../pulumi/preview-steps.ts";
import type { Observed } from "./children.ts";

/** `spec.template.spec.containers[app].env[EXTRA]: added by kubectl-set` -> its path. */
function pathOf(line: string): string {
  return line.slice(0, line.indexOf(": added"));
}

/** The preview's steps and counts with the removal of every addition in `observed` merged in. */
export function withRemovals(planned: PlannedChanges, observed: Observed): PlannedChanges {
  const steps = planned.steps.map((step) => ({ ...step }));
  for (const state of observed.children) {
    if (state.state !== "owned" || !state.added.length) continue;
    const type = childKindNamed(state.child.kind).resourceType;
    const paths = state.added.map(pathOf);
    const step = steps.find((s) => s.type === type && s.name === state.child.name);
    if (!step) steps.push({ type, name: state.child.name, step: "update", paths });
    else if (step.step === "same" || step.step === "update") Object.assign(step, { step: "update", paths: [...new Set([...(step.paths ?? []), ...paths])].sort() } satisfies Partial<PreviewStep>);
  }
  const changes: Record<string, number> = {};
  for (const { step } of steps) changes[step] = (changes[step] ?? 0) + 1;
  return { steps, changes };
}
