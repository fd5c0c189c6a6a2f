// updatePolicy Preview's side of Pulumi: a preview that saves its plan and writes it to status for
// a person to approve, and the approval annotation removed once it is used or refused. Which of
// these a reconcile runs is the gate's rule (approval.ts).
import { approveAnnotation, type PreviewStatus, type StackStatus, type Workload } from "../../crds/types.ts";
import { approvalOf, consumeApproval } from "./approval.ts";
import type { Observed } from "./children.ts";
import type { Phase } from "./conditions.ts";
import { appliedRecord, previewBasis, programVersionOf, refreshes, type Pending } from "./drift.ts";
import type { EventRecorder } from "./events.ts";
import type { Ownership } from "./ownership.ts";
import { withRemovals } from "./removals.ts";
import type { Reporter } from "./reporting.ts";
import type { KubeClients } from "../kube/clients.ts";
import type { Logger } from "../base/log.ts";
import type { PlanStore } from "../pulumi/plans.ts";
import { describeChanges, describeSteps, hasChanges } from "../pulumi/preview-steps.ts";
import { programFor } from "../pulumi/programs.ts";
import type { HandlerResult } from "./queue.ts";
import type { StackDriver } from "../pulumi/stacks.ts";
import { stackStatusOf } from "./status.ts";
import { actingUser, type Tenancy } from "./tenancy.ts";

function approveCommand(object: Workload, planId: string): string {
  return `kubectl annotate ${object.kind.toLowerCase()} ${object.metadata.name} -n ${object.metadata.namespace} ${approveAnnotation}=${planId}`;
}

export function awaiting(object: Workload, preview: PreviewStatus): Phase {
  return { kind: "awaiting", message: `plan ${preview.planId}: ${describeChanges(preview.changes)}; approve with: ${approveCommand(object, preview.planId)}` };
}

export interface PreviewingDeps {
  readonly clients: KubeClients;
  readonly driver: StackDriver;
  readonly plans: PlanStore;
  readonly events: EventRecorder;
  readonly ownership: Ownership;
  readonly reporter: Reporter;
  /** Tenant identities (tenancy.ts): undefined, the operator's own rights. */
  readonly tenancy?: Tenancy | undefined;
}

export class Previewing {
  private readonly deps: PreviewingDeps;

  constructor(deps: PreviewingDeps) {
    this.deps = deps;
  }

  /**
   * The approval on the object, unless its plan is the one applied last: the removal after that
   * `up` failed, and it is removed now instead of refused (plan ids are digests of plans that
   * carry their time, so no later preview has this id).
   */
  async unusedApproval(object: Workload): Promise<string | undefined> {
    const approval = approvalOf(object);
    if (approval === undefined || approval !== object.status?.stack?.appliedPlan) return approval;
    await consumeApproval(this.deps.clients, object, approval);
    return undefined;
  }

  /** Runs a preview that saves its plan, and writes it to status for a person to approve. */
  async preview(object: Workload, stack: string, key: string, decision: Pending, observed: Observed, log: Logger): Promise<HandlerResult> {
    const previous = stackStatusOf(object, stack);
    const basis = previewBasis(programVersionOf(object.kind), object.metadata.generation ?? 0, observed.drift);
    const draft = await this.deps.plans.draft(stack);
    await this.deps.ownership.handOver(object, decision, observed, log);
    log.info("pulumi preview", { reason: decision.reason, refresh: refreshes(decision) });
    const started = Date.now();
    let planned: Awaited<ReturnType<StackDriver["preview"]>>;
    try {
      await this.deps.ownership.dropForeign(object, stack, log);
      const as = actingUser(object, this.deps.tenancy);
      planned = await this.deps.driver.preview(stack, programFor(object), { refresh: refreshes(decision), plan: draft, ...(as ? { as } : {}) });
    } catch (error) {
      await this.deps.plans.discard(stack, draft);
      throw await this.deps.reporter.operationFailed(object, key, previous, observed.deployment, error, started, log);
    }
    // What the approved repair removes beyond Pulumi's plan is part of what is approved.
    planned = { ...planned, ...withRemovals(planned, observed) };
    log.info("pulumi preview succeeded", { operation: "preview", durationMs: Date.now() - started, changes: planned.changes });
    const stackStatus: StackStatus = { name: stack, lastOperation: planned.operation, ...(previous.appliedFingerprint ? { appliedFingerprint: previous.appliedFingerprint } : {}), attempts: 0 };
    if (!hasChanges(planned.changes)) {
      // Nothing Pulumi manages would change (only updatePolicy did, say): record it as applied,
      // and let the live children say whether that is the truth.
      await this.deps.plans.discard(stack);
      return this.deps.reporter.settle(object, stack, key, { ...stackStatus, appliedFingerprint: appliedRecord(object) }, log);
    }
    const planId = await this.deps.plans.commit(stack, draft);
    const preview: PreviewStatus = { planId, generation: object.metadata.generation ?? 0, basis, reason: decision.reason, time: new Date().toISOString(), changes: planned.changes, steps: planned.steps };
    this.deps.events.record(object, "Normal", "ChangesPending", `plan ${planId} (${decision.reason}): ${describeSteps(planned.steps)}; approve with: ${approveCommand(object, planId)}`);
    await this.deps.reporter.report(object, observed.deployment, awaiting(object, preview), stackStatus, preview);
    return undefined;
  }

  /** Says why an approval was not carried out (if it was not), and removes it. */
  async refuse(object: Workload, approval: string, why: string | undefined, log: Logger): Promise<void> {
    if (why) {
      log.warn("approval refused", { approval, reason: why });
      this.deps.events.record(object, "Warning", "ApprovalRefused", why);
    }
    await consumeApproval(this.deps.clients, object, approval);
  }
}
