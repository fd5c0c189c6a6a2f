// "Reconcile now": a person (or `kubectl appstack reconcile`) sets the annotation
// appstack.dev/reconcile-requested-at to a new value, and the operator runs a refresh and `up` at
// once, even when nothing seems to differ; status.lastHandledReconcileAt takes the value once the
// operation has ended, so a script can wait for it, then read Ready or Stalled. As Flux's
// reconcile.fluxcd.io/requestedAt. A suspended object handles no request: it waits, unhandled,
// until the object is resumed.
import { reconcileRequestAnnotation, type Workload } from "../../crds/types.ts";
import type { Decision } from "./drift.ts";
import { isSuspended } from "./suspension.ts";

/** The request's value, if the object has one that has not been handled and may be now. */
export function pendingRequest(object: Workload): string | undefined {
  const requested = object.metadata.annotations?.[reconcileRequestAnnotation];
  if (!requested || requested === object.status?.lastHandledReconcileAt || isSuspended(object)) return undefined;
  return requested;
}

/** Why a request's operation runs, in words. */
export function requestReason(requested: string): string {
  return `reconcile requested (${reconcileRequestAnnotation}: ${requested})`;
}

/**
 * What to run when `requested` is pending: whatever was decided, refreshed first (the request is
 * for the engine to look at the cluster again), and carrying the value to record; `up` even when
 * nothing differs.
 */
export function withRequest(decision: Decision, requested: string | undefined): Decision {
  if (requested === undefined) return decision;
  if (decision.action === "none") return { action: "apply", reason: requestReason(requested), refresh: true, cause: "requested", requested };
  return decision.action === "apply" ? { ...decision, refresh: true, requested } : { ...decision, requested };
}
