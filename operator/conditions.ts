// kstatus conditions: Reconciling while work is under way, Stalled when it cannot go on without a
// change, Ready when the workload is available. Changes waiting for approval are none of the
// three: the operator is not working and nothing failed, a person has to act. lastTransitionTime moves only when status changes.
import type { Condition } from "../crds/types.ts";

export type Phase =
  | { kind: "ready"; message: string }
  | { kind: "progressing"; reason: string; message: string }
  | { kind: "stalled"; reason: string; message: string }
  | { kind: "awaiting"; message: string }
  | { kind: "deleting"; message: string };

type Desired = Pick<Condition, "type" | "status" | "reason" | "message">;

function desiredConditions(phase: Phase): Desired[] {
  switch (phase.kind) {
    case "ready":
      return [
        { type: "Ready", status: "True", reason: "Available", message: phase.message },
        { type: "Reconciling", status: "False", reason: "Available", message: "" },
        { type: "Stalled", status: "False", reason: "Available", message: "" },
      ];
    case "progressing":
      return [
        { type: "Ready", status: "False", reason: phase.reason, message: phase.message },
        { type: "Reconciling", status: "True", reason: phase.reason, message: phase.message },
        { type: "Stalled", status: "False", reason: phase.reason, message: "" },
      ];
    case "stalled":
      return [
        { type: "Ready", status: "False", reason: phase.reason, message: phase.message },
        { type: "Reconciling", status: "False", reason: phase.reason, message: "" },
        { type: "Stalled", status: "True", reason: phase.reason, message: phase.message },
      ];
    case "awaiting":
      return [
        { type: "Ready", status: "False", reason: "AwaitingApproval", message: phase.message },
        { type: "Reconciling", status: "False", reason: "AwaitingApproval", message: "" },
        { type: "Stalled", status: "False", reason: "AwaitingApproval", message: "" },
      ];
    case "deleting":
      return [
        { type: "Ready", status: "False", reason: "Deleting", message: phase.message },
        { type: "Reconciling", status: "True", reason: "Deleting", message: phase.message },
        { type: "Stalled", status: "False", reason: "Deleting", message: "" },
      ];
  }
}

export function conditionsFor(phase: Phase, generation: number | undefined, previous: Condition[] = [], now = new Date()): Condition[] {
  return desiredConditions(phase).map((want) => {
    const before = previous.find((c) => c.type === want.type);
    const lastTransitionTime = before && before.status === want.status ? before.lastTransitionTime : now.toISOString();
    return { ...want, observedGeneration: generation, lastTransitionTime };
  });
}
