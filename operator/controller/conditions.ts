// kstatus conditions: Reconciling while work is under way, Stalled when it cannot go on without a
// change, Ready when the workload is available. Changes waiting for approval are none of the
// three: the operator is not working and nothing failed, a person has to act; so is a suspended
// object that holds changes back (suspension.ts). lastTransitionTime moves only when status changes.
import type { Condition } from "../../crds/types.ts";

export type Phase =
  | { kind: "ready"; message: string }
  | { kind: "progressing"; reason: string; message: string }
  | { kind: "stalled"; reason: string; message: string }
  | { kind: "awaiting"; message: string }
  /** spec.suspend (suspension.ts): `current` when nothing is held back and the rollout is complete. */
  | { kind: "suspended"; current: boolean; message: string }
  | { kind: "deleting"; message: string };

type Desired = Pick<Condition, "type" | "status" | "reason" | "message">;

/** Ready always carries the message; Reconciling and Stalled only while they are True. */
function kstatus(reason: string, message: string, state: { ready: boolean; reconciling: boolean; stalled: boolean }): Desired[] {
  const status = (on: boolean) => (on ? "True" : "False");
  return [
    { type: "Ready", status: status(state.ready), reason, message },
    { type: "Reconciling", status: status(state.reconciling), reason, message: state.reconciling ? message : "" },
    { type: "Stalled", status: status(state.stalled), reason, message: state.stalled ? message : "" },
  ];
}

function desiredConditions(phase: Phase): Desired[] {
  switch (phase.kind) {
    case "ready":
      return kstatus("Available", phase.message, { ready: true, reconciling: false, stalled: false });
    case "progressing":
      return kstatus(phase.reason, phase.message, { ready: false, reconciling: true, stalled: false });
    case "stalled":
      return kstatus(phase.reason, phase.message, { ready: false, reconciling: false, stalled: true });
    case "awaiting":
      return kstatus("AwaitingApproval", phase.message, { ready: false, reconciling: false, stalled: false });
    case "suspended":
      return kstatus("Suspended", phase.message, { ready: phase.current, reconciling: false, stalled: false });
    case "deleting":
      return kstatus("Deleting", phase.message, { ready: false, reconciling: true, stalled: false });
  }
}

export function conditionsFor(phase: Phase, generation: number | undefined, previous: Condition[] = [], now = new Date()): Condition[] {
  return desiredConditions(phase).map((want) => {
    const before = previous.find((c) => c.type === want.type);
    const lastTransitionTime = before && before.status === want.status ? before.lastTransitionTime : now.toISOString();
    return { ...want, observedGeneration: generation, lastTransitionTime };
  });
}
