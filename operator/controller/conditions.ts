// kstatus conditions: Reconciling while work is under way, Stalled when it cannot go on without a
// change, Ready when the workload is available. Changes waiting for approval are none of the
// three: the operator is not working and nothing failed, a person has to act; so is a suspended
// object that holds changes back (suspension.ts). lastTransitionTime moves only when status changes.
// Each reason, with when it is given and what to do, is in reasons.ts.
import type { Condition } from "../../crds/types.ts";
import type { ConditionReason, ReasonOf } from "./reasons.ts";

export type Phase =
  | { kind: "ready"; message: string }
  | { kind: "progressing"; reason: ReasonOf<"progressing">; message: string }
  | { kind: "stalled"; reason: ReasonOf<"stalled">; message: string }
  | { kind: "awaiting"; message: string }
  /** spec.suspend (suspension.ts): `current` when nothing is held back and the rollout is complete. */
  | { kind: "suspended"; current: boolean; message: string }
  | { kind: "deleting"; message: string };

/** What the children say (child-readiness.ts): current, under way, or unable to go on without a change. */
export type ChildPhase = Extract<Phase, { kind: "ready" | "progressing" | "stalled" }>;

type Desired = Pick<Condition, "type" | "status" | "reason" | "message">;

/** Whether `phase` says Ready=True: Ready itself, or suspended with its children current. */
export function isReadyPhase(phase: Phase): boolean {
  return phase.kind === "ready" || (phase.kind === "suspended" && phase.current);
}

/** The reason of each phase that has one of its own. */
const phaseReasons = { ready: "Available", awaiting: "AwaitingApproval", suspended: "Suspended", deleting: "Deleting" } as const satisfies { [P in "ready" | "awaiting" | "suspended" | "deleting"]: ReasonOf<P> };

/** Ready always carries the message; Reconciling and Stalled only while they are True. */
function kstatus(reason: ConditionReason, message: string, state: { ready: boolean; reconciling: boolean; stalled: boolean }): Desired[] {
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
      return kstatus(phaseReasons.ready, phase.message, { ready: true, reconciling: false, stalled: false });
    case "progressing":
      return kstatus(phase.reason, phase.message, { ready: false, reconciling: true, stalled: false });
    case "stalled":
      return kstatus(phase.reason, phase.message, { ready: false, reconciling: false, stalled: true });
    case "awaiting":
      return kstatus(phaseReasons.awaiting, phase.message, { ready: false, reconciling: false, stalled: false });
    case "suspended":
      return kstatus(phaseReasons.suspended, phase.message, { ready: phase.current, reconciling: false, stalled: false });
    case "deleting":
      return kstatus(phaseReasons.deleting, phase.message, { ready: false, reconciling: true, stalled: false });
  }
}

export function conditionsFor(phase: Phase, generation: number | undefined, previous: Condition[] = [], now = new Date()): Condition[] {
  return desiredConditions(phase).map((want) => {
    const before = previous.find((c) => c.type === want.type);
    const lastTransitionTime = before && before.status === want.status ? before.lastTransitionTime : now.toISOString();
    return { ...want, observedGeneration: generation, lastTransitionTime };
  });
}
