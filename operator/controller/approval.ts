// The approval gate of updatePolicy Preview: what to do with an object given why it needs Pulumi,
// the preview waiting in its status, and the plan id a person approved (if any). The rules live
// here as one pure function; the reconciler carries them out.
import { approveAnnotation, type PreviewStatus, type Workload } from "../../crds/types.ts";
import type { Decision } from "./drift.ts";
import { isConflict, isNotFound, keyOf, patchWorkload, type KubeClients } from "../kube/clients.ts";

export type Gate =
  /** Nothing to change: report the live state; no preview waits. */
  | { action: "settled"; refused?: string }
  /** The preview in status still stands: keep waiting for its approval. */
  | { action: "wait"; refused?: string }
  /** Run a fresh preview and wait for its approval. */
  | { action: "preview"; refused?: string }
  /** Apply exactly this stored plan. */
  | { action: "apply"; planId: string; planFile: string };

export interface GateInput {
  readonly decision: Decision;
  /** previewBasis() of the object and its children now. */
  readonly basis: string;
  readonly preview?: PreviewStatus;
  readonly approval?: string;
  /** The stored plan file of an id, if it is still stored. */
  readonly findPlan: (planId: string) => string | undefined;
}

export function gate({ decision, basis, preview, approval, findPlan }: GateInput): Gate {
  const current = preview?.basis === basis ? preview : undefined;
  if (approval === undefined) {
    if (decision.action === "none") return { action: "settled" };
    return current ? { action: "wait" } : { action: "preview" };
  }
  if (decision.action === "none") return { action: "settled", refused: `approval of plan ${approval} refused: no changes are waiting for approval` };
  if (!current) {
    const why = preview?.planId === approval ? `the spec or its resources changed since plan ${approval} was previewed` : `plan ${approval} is not the waiting preview`;
    return { action: "preview", refused: `approval refused: ${why}; a fresh preview was written` };
  }
  if (current.planId !== approval) return { action: "wait", refused: `approval refused: plan ${approval} is not the waiting preview (${current.planId})` };
  const planFile = findPlan(approval);
  if (!planFile) return { action: "preview", refused: `approval refused: plan ${approval} is no longer stored (the operator lost its state folder); a fresh preview was written` };
  return { action: "apply", planId: approval, planFile };
}

export function approvalOf(object: Workload): string | undefined {
  return object.metadata.annotations?.[approveAnnotation];
}

/**
 * Removes the approval once it has been used or refused, so that it never applies a later plan.
 * The test keeps a newer approval a person wrote in the meantime.
 */
export async function consumeApproval(clients: KubeClients, object: Workload, value: string): Promise<void> {
  const path = `/metadata/annotations/${approveAnnotation.replaceAll("~", "~0").replaceAll("/", "~1")}`;
  try {
    await patchWorkload(clients, keyOf(object), [
      { op: "test", path, value },
      { op: "remove", path },
    ]);
  } catch (error) {
    // Gone, or approved again with another id: nothing of ours to remove.
    if (isNotFound(error) || isConflict(error)) return;
    throw error;
  }
}
