// spec.suspend: the operator stops acting on the object (no `up`, no drift repair, no preview,
// no refresh) but goes on observing it, and says in its status what resuming would change. Only a
// deletion still runs, as deletionPolicy Orphan: the children stay, and the stack goes without a
// destroy (orphaning.ts), as Flux's kustomize-controller skips its garbage collection when suspended.
//
// How the status reads, and why (docs/api.md#suspend-and-resume): Ready keeps telling whether the
// live children are what the current spec asks for. Nothing held back (the spec applied, no
// drift): Ready=True with reason Suspended, so kstatus reads Current and `kubectl wait
// --for=condition=Ready` returns, both truthfully. Something held back (a spec not applied, drift
// not repaired): Ready=False with reason Suspended, Reconciling and Stalled False (nothing runs,
// nothing failed, as AwaitingApproval), and status.observedGeneration stays at the applied
// generation: kstatus reads InProgress and `kubectl wait` waits, since what was asked for is not live.
import type { Workload } from "../../crds/types.ts";
import type { Phase } from "./conditions.ts";
import { decide, describeDrift, type Applied } from "./drift.ts";

export function isSuspended(object: Workload): boolean {
  return object.spec.suspend === true;
}

export interface SuspendedInput {
  /** The program version of the object's kind now (drift.ts programVersionOf). */
  readonly program: string;
  readonly generation: number;
  /** The applied record as it stands now (drift.ts appliedNow). */
  readonly applied: Applied | undefined;
  /** What differs between the live children and the current spec's manifests. */
  readonly drift: readonly string[];
  /** What the live Deployment's rollout says (status.ts rolloutPhase). */
  readonly rollout: Phase;
}

const suspendedWords = "suspended (spec.suspend): nothing is applied or repaired until it is resumed";

/**
 * The phase of a suspended object: what a reconcile would do now, as held back, else the rollout
 * as the Deployment controller carries it on (Ready=True reading Suspended once it is complete).
 */
export function suspendedPhase(input: SuspendedInput): Phase {
  const pending = decide({ program: input.program, generation: input.generation, applied: input.applied, drift: input.drift, orphanedState: false });
  if (pending.action === "none") return input.rollout.kind === "ready" ? { kind: "suspended", current: true, message: `${input.rollout.message}; ${suspendedWords}` } : input.rollout;
  // A spec not applied: the differences are partly that spec, so they are not called drift.
  const differs = pending.action === "apply" && input.drift.length ? `; the live children differ from it: ${describeDrift(input.drift)}` : "";
  return { kind: "suspended", current: false, message: `${suspendedWords}; held back: ${pending.reason}${differs}` };
}
