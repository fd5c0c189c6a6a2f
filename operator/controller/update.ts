// A `pulumi up` of one object's stack: reported as under way, run (of an approved plan, under
// updatePolicy Preview), said in an Event, and settled against the live children afterwards.
import type { StackOperation, StackStatus, Workload } from "../../crds/types.ts";
import { consumeApproval } from "./approval.ts";
import type { Observed } from "./children.ts";
import { appliedRecord, refreshes, type Pending } from "./drift.ts";
import type { Previewing, PreviewingDeps } from "./previewing.ts";
import { briefError } from "../kube/clients.ts";
import type { Logger } from "../base/log.ts";
import { describeChanges } from "../pulumi/preview-steps.ts";
import { driftField, updateMessage, type UpdateRecord } from "../pulumi/update-messages.ts";
import { programFor } from "../pulumi/programs.ts";
import type { HandlerResult } from "./queue.ts";
import { OperationInterrupted, StackBusy, StackOperationFailed } from "../pulumi/stack-errors.ts";
import { stackStatusOf } from "./status.ts";
import { actingUser } from "./tenancy.ts";

/** When to remove again an approval whose plan was applied but whose removal failed. */
const approvalRetryMs = 1_000;

/** An approved plan: its id (the annotation's value) and where it is stored. */
export interface Approved {
  readonly planId: string;
  readonly planFile: string;
}

/** The stack report of a successful `up`: what it applied, from which approved plan if any. */
function appliedStack(object: Workload, stack: string, operation: StackOperation, approved: Approved | undefined): StackStatus {
  const appliedFingerprint = appliedRecord(object);
  return { name: stack, lastOperation: operation, appliedFingerprint, ...(approved ? { appliedPlan: approved.planId } : {}), attempts: 0 };
}

/** Why this `up` runs, as the stack's history keeps it (update-messages.ts). */
export function updateRecord(object: Workload, decision: Pending, drift: readonly string[], previous: StackStatus, approved: Approved | undefined): UpdateRecord {
  const generation = object.metadata.generation ?? 0;
  const attempt = (previous.attempts ?? 0) > 0 ? { attempt: (previous.attempts ?? 0) + 1 } : {};
  const fields = drift.length ? { fields: drift.map(driftField) } : {};
  if (approved) return { generation, why: "approved", plan: approved.planId, detail: object.status?.preview?.reason ?? decision.reason, ...fields, ...attempt };
  if (decision.action === "repair") return { generation, why: "drift", detail: decision.reason, ...fields, ...attempt };
  return { generation, why: decision.cause, detail: decision.reason, ...attempt };
}

/** What an update uses: what a preview uses, and the preview itself. */
export interface UpdateDeps extends PreviewingDeps {
  /** Where an approved plan the program has outgrown goes: refused, and previewed afresh. */
  readonly previewing: Previewing;
}

export class Update {
  private readonly deps: UpdateDeps;

  constructor(deps: UpdateDeps) {
    this.deps = deps;
  }

  async apply(object: Workload, stack: string, key: string, decision: Pending, observed: Observed, log: Logger, approved?: Approved): Promise<HandlerResult> {
    const previous = stackStatusOf(object, stack);
    // An approved plan stays in status until it is applied: a failed attempt retries the same plan.
    const preview = approved ? object.status?.preview : undefined;
    const applying = approved ? `pulumi up of approved plan ${approved.planId}` : `pulumi up: ${decision.reason}`;
    await this.deps.reporter.report(object, observed.deployment, { kind: "progressing", reason: decision.action === "repair" ? "RepairingDrift" : "Applying", message: applying }, previous, preview);
    const removed = await this.deps.ownership.handOver(object, decision, observed, log, true);
    log.info("pulumi up", { reason: decision.reason, refresh: refreshes(decision), plan: approved?.planId });
    const started = Date.now();
    let operation: StackOperation;
    try {
      await this.deps.ownership.dropForeign(object, stack, log);
      const message = updateMessage(updateRecord(object, decision, observed.drift, previous, approved));
      operation = await this.up(object, stack, refreshes(decision), message, log, approved);
    } catch (error) {
      if (error instanceof StackBusy) return this.deps.reporter.locked(object, observed.deployment, previous, error, log);
      if (approved && error instanceof StackOperationFailed && /violates plan/.test(error.message)) {
        // The program now asks for more than the approved plan allows: preview again.
        await this.deps.previewing.refuse(object, approved.planId, `approval refused: the cluster no longer matches plan ${approved.planId} (${error.message}); a fresh preview was written`, log);
        return this.deps.previewing.preview(object, stack, key, decision, observed, log);
      }
      if (decision.requested !== undefined && !(error instanceof OperationInterrupted)) this.deps.reporter.handled(object, decision.requested);
      throw await this.deps.reporter.operationFailed(object, key, previous, observed.deployment, error, started, log, preview);
    }
    if (decision.requested !== undefined) this.deps.reporter.handled(object, decision.requested);
    log.info("pulumi up succeeded", { operation: "up", durationMs: Date.now() - started, changes: operation.resourceChanges });
    const approvalLeft = await this.applied(object, stack, decision, operation, log, approved, removed);
    const settled = await this.deps.reporter.settle(object, stack, key, appliedStack(object, stack, operation, approved), log);
    // The up succeeded and says so; the approval it used is removed by the next pass (see gated in reconcile.ts).
    return approvalLeft ? { outcome: "requeued", requeueAfterMs: approvalRetryMs } : settled;
  }

  /**
   * `up`, refreshed first when the stack's record cannot be trusted. An update that finds a child
   * gone which the state still records ("not found") is run again with a refresh: the state is
   * from a cluster or an object that no longer exists.
   */
  private async up(object: Workload, stack: string, refresh: boolean, message: string, log: Logger, approved?: Approved): Promise<StackOperation> {
    const as = actingUser(object, this.deps.tenancy);
    const run = (withRefresh: boolean) => this.deps.driver.up(stack, programFor(object), { refresh: withRefresh, message, ...(approved ? { plan: approved.planFile } : {}), ...(as ? { as } : {}) });
    try {
      return await run(refresh);
    } catch (error) {
      if (refresh || approved || !(error instanceof StackOperationFailed) || !/not found/.test(error.message)) throw error;
      log.warn("the stack's state names resources that do not exist; refreshing and updating again", { error: error.message });
      return run(true);
    }
  }

  /**
   * Says what a successful `up` did (and the server-side apply that removed additions before it,
   * when `removed` children had any); an approval it carried out is used up. Returns whether that
   * approval is still on the object: the API server refused its removal, which the up's success
   * does not undo.
   */
  private async applied(object: Workload, stack: string, decision: Pending, operation: StackOperation, log: Logger, approved: Approved | undefined, removed: number): Promise<boolean> {
    const changes = describeChanges(operation.resourceChanges, "done");
    const by = removed ? "appstack's server-side apply (the additions) and pulumi up" : "pulumi up";
    if (!approved) {
      if (decision.action === "repair") this.deps.events.record(object, "Normal", "DriftRepaired", `${decision.reason}; repaired by ${by} (${changes})`);
      else this.deps.events.record(object, "Normal", "StackUpdated", `${decision.reason}; applied by pulumi up (${changes})`);
      return false;
    }
    await this.deps.plans.discard(stack);
    this.deps.events.record(object, "Normal", "PlanApplied", `approved plan ${approved.planId} applied by ${by} (${changes})`);
    try {
      await consumeApproval(this.deps.clients, object, approved.planId);
      return false;
    } catch (error) {
      log.warn("the approval of the applied plan could not be removed; removing it again shortly", { plan: approved.planId, retryInMs: approvalRetryMs, error: briefError(error) });
      return true;
    }
  }
}
