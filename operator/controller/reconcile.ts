// The reconciler: one object at a time, make the cluster match the spec through Pulumi when
// something differs, and report what the live children say either way. It writes only children
// that are the object's own: a child of the same name that someone else made is a conflict.
import type { V1Deployment } from "@kubernetes/client-node";
import { podSelector } from "../../components/kinds.ts";
import { selectorString } from "../../components/metadata.ts";
import { approveAnnotation, type MemcachedStatus, type PreviewStatus, type StackOperation, type StackStatus, type Workload } from "../../crds/types.ts";
import { approvalOf, consumeApproval, gate } from "./approval.ts";
import { Children, type Observed } from "./children.ts";
import type { Phase } from "./conditions.ts";
import { decide, decodeApplied, describeDrift, encodeApplied, previewBasis, programVersion, type Decision } from "./drift.ts";
import { errorReason, isStateUnwritable, ReportedFailure } from "./errors.ts";
import { withRemovals } from "./removals.ts";
import type { EventRecorder } from "./events.ts";
import { addFinalizer, hasFinalizer, removeFinalizer } from "./finalizer.ts";
import { briefError, isNotFound, parseKey, readWorkload, type KubeClients } from "../kube/clients.ts";
import type { Logger } from "../manager/log.ts";
import { namespaceTerminating } from "../kube/namespaces.ts";
import type { PlanStore } from "../pulumi/plans.ts";
import { describeChanges, describeSteps, hasChanges } from "../pulumi/preview-steps.ts";
import { programFor } from "../pulumi/programs.ts";
import type { Backoff, HandlerResult } from "./queue.ts";
import { stackName } from "../pulumi/stack-names.ts";
import { OperationInterrupted, OperationTimedOut, StackBusy, StackOperationFailed } from "../pulumi/stack-errors.ts";
import type { StackDriver } from "../pulumi/stacks.ts";
import { computeStatus, rolloutPhase, withScheduling, writeStatus } from "./status.ts";
import type { Watcher } from "./watch.ts";

const busyRetryMs = 5_000;
/** An App and a Memcached of one name want the same children: one reconciles at a time. */
const sameNameRetryMs = 1_000;
/** When to remove again an approval whose plan was applied but whose removal failed. */
const approvalRetryMs = 1_000;
/** Destroy attempts in a terminating namespace before the stack is forgotten instead. */
const terminatingNamespaceAttempts = 3;

export interface ReconcilerDeps {
  readonly clients: KubeClients;
  readonly watcher: Watcher;
  readonly driver: StackDriver;
  readonly plans: PlanStore;
  readonly events: EventRecorder;
  readonly log: Logger;
  readonly backoff: (key: string) => Backoff;
}

/** An approved plan: its id (the annotation's value) and where it is stored. */
interface Approved {
  readonly planId: string;
  readonly planFile: string;
}

type Pending = Exclude<Decision, { action: "none" }>;

function approveCommand(object: Workload, planId: string): string {
  return `kubectl annotate ${object.kind.toLowerCase()} ${object.metadata.name} -n ${object.metadata.namespace} ${approveAnnotation}=${planId}`;
}

function awaiting(object: Workload, preview: PreviewStatus): Phase {
  return { kind: "awaiting", message: `plan ${preview.planId}: ${describeChanges(preview.changes)}; approve with: ${approveCommand(object, preview.planId)}` };
}

/** The stack report of a failed attempt: how many in a row, and when the next one comes. */
function retrying(stack: StackStatus, attempt: number, delayMs: number): StackStatus {
  return { ...stack, attempts: attempt, nextRetryTime: new Date(Date.now() + delayMs).toISOString() };
}

/** The stack report with the failed operation an error carries, if it carries one. */
function withOperationOf(stack: StackStatus, error: unknown): StackStatus {
  return error instanceof StackOperationFailed ? { ...stack, lastOperation: error.operation } : stack;
}

/** The stack report of a successful `up`: what it applied, from which approved plan if any. */
function appliedStack(object: Workload, stack: string, operation: StackOperation, approved: Approved | undefined): StackStatus {
  const appliedFingerprint = encodeApplied({ programVersion, generation: object.metadata.generation ?? 0 });
  return { name: stack, lastOperation: operation, appliedFingerprint, ...(approved ? { appliedPlan: approved.planId } : {}), attempts: 0 };
}

function refreshes(decision: Pending): boolean {
  return decision.action === "repair" || decision.refresh;
}

function conflictMessage(object: Workload, observed: Observed): string {
  const taken = observed.conflicts.map((c) => `${c.child.kind} ${object.metadata.namespace}/${c.child.name} (${c.state === "foreign" && c.controller ? `controlled by ${c.controller}` : "not created by appstack"})`);
  return `${taken.join(" and ")} already exists and was not created for this ${object.kind}; appstack neither changes nor deletes it. Delete or rename it, or give this ${object.kind} another name`;
}

export class Reconciler {
  /** The last status written per object: fresher than the watch cache right after a write. */
  private readonly written = new Map<string, MemcachedStatus>();
  /** namespace/name -> the key reconciling now: the children's names are claimed one object at a time. */
  private readonly claimed = new Map<string, string>();

  private readonly children: Children;

  private readonly deps: ReconcilerDeps;

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
    this.children = new Children(deps.clients, deps.watcher);
  }

  /** Reconciles one key; any failure is logged and shown on the object before the queue retries it. */
  async reconcile(key: string): Promise<HandlerResult> {
    try {
      return await this.reconcileKey(key);
    } catch (error) {
      // Stopped for the handover: no failure, and nothing to retry here.
      if (error instanceof OperationInterrupted) return { outcome: "interrupted" };
      if (!(error instanceof ReportedFailure)) await this.unexpected(key, error);
      throw error;
    }
  }

  private async reconcileKey(key: string): Promise<HandlerResult> {
    const objectKey = parseKey(key);
    const { kind, namespace, name } = objectKey;
    const stack = stackName(kind, namespace, name);
    const cached = this.deps.watcher.workload(kind, namespace, name);
    if (!cached) {
      // Gone without our finalizer running (removed by hand): the children go with their
      // ownerReferences; the stack state must not linger in the backend. Forgetting is for good,
      // so the cache's word is checked with the API server first.
      if (!(await this.deps.driver.exists(stack))) return;
      if (await readWorkload(this.deps.clients, objectKey)) return { outcome: "requeued", requeueAfterMs: busyRetryMs };
      this.deps.log.warn("object deleted without its finalizer; removing its stack state", { object: key, stack });
      await this.deps.driver.forget(stack);
      return { outcome: "forgotten" };
    }
    const claim = `${namespace}/${name}`;
    if ((this.claimed.get(claim) ?? key) !== key) return { outcome: "requeued", requeueAfterMs: sameNameRetryMs };
    this.claimed.set(claim, key);
    try {
      const object = { ...cached, status: this.written.get(cached.metadata.uid) ?? cached.status } as Workload;
      return await this.reconcileObject(object, stack, key, this.deps.log.with({ object: key, stack }));
    } finally {
      this.claimed.delete(claim);
    }
  }

  private async reconcileObject(object: Workload, stack: string, key: string, log: Logger): Promise<HandlerResult> {
    if (object.metadata.deletionTimestamp) return this.finalize(object, stack, key, log);
    if (!hasFinalizer(object)) object.metadata = (await addFinalizer(this.deps.clients, object)).metadata;

    const observed = await this.children.observe(object);
    if (observed.conflicts.length) return this.conflict(object, stack, key, observed, log);
    const applied = decodeApplied(object.status?.stack?.appliedFingerprint);
    const orphanedState = !applied && (await this.deps.driver.hasResources(stack));
    const decision = decide({ generation: object.metadata.generation ?? 0, applied, drift: observed.drift, orphanedState });
    if (decision.action === "none" && (await this.deps.driver.hasPendingOperations(stack))) return this.finishInterrupted(object, stack, key, observed, log);
    if (object.spec.updatePolicy === "Preview") return this.gated(object, stack, key, decision, observed, log);
    if (decision.action === "none") {
      await this.report(object, observed.deployment, rolloutPhase(object, observed.deployment), object.status?.stack ?? { name: stack });
      return;
    }
    return this.apply(object, stack, key, decision, observed, log);
  }

  /**
   * The children are as they should be, but an engine killed mid-operation (its writes done, say)
   * left pending operations in the stack: its record of the cluster is unfinished. `up --refresh`
   * records the cluster again, a create that went through included (server-side apply adopts it);
   * under updatePolicy Preview only a refresh runs, which changes nothing and needs no approval.
   */
  private async finishInterrupted(object: Workload, stack: string, key: string, observed: Observed, log: Logger): Promise<HandlerResult> {
    const reason = "an interrupted operation left the stack's record of the cluster unfinished";
    if (object.spec.updatePolicy !== "Preview") return this.apply(object, stack, key, { action: "apply", reason, refresh: true }, observed, log);
    log.info("pulumi refresh", { reason });
    const started = Date.now();
    const previous: StackStatus = object.status?.stack ?? { name: stack };
    try {
      await this.deps.driver.refresh(stack, programFor(object));
    } catch (error) {
      if (error instanceof StackBusy) return this.locked(object, observed.deployment, previous, error, log);
      throw await this.operationFailed(object, key, previous, observed.deployment, error, started, log, object.status?.preview);
    }
    log.info("pulumi refresh succeeded", { operation: "refresh", durationMs: Date.now() - started });
    this.deps.events.record(object, "Normal", "StackRefreshed", `${reason}; recorded again by pulumi refresh`);
    return this.gated(object, stack, key, { action: "none" }, observed, log);
  }

  private async apply(object: Workload, stack: string, key: string, decision: Pending, observed: Observed, log: Logger, approved?: Approved): Promise<HandlerResult> {
    const previous: StackStatus = object.status?.stack ?? { name: stack };
    // An approved plan stays in status until it is applied: a failed attempt retries the same plan.
    const preview = approved ? object.status?.preview : undefined;
    const applying = approved ? `pulumi up of approved plan ${approved.planId}` : `pulumi up: ${decision.reason}`;
    await this.report(object, observed.deployment, { kind: "progressing", reason: decision.action === "repair" ? "RepairingDrift" : "Applying", message: applying }, previous, preview);
    const removed = await this.handOver(object, decision, observed, log, true);
    log.info("pulumi up", { reason: decision.reason, refresh: refreshes(decision), plan: approved?.planId });
    const started = Date.now();
    let operation: StackOperation;
    try {
      await this.dropForeign(object, stack, log);
      operation = await this.up(object, stack, refreshes(decision), log, approved);
    } catch (error) {
      if (error instanceof StackBusy) return this.locked(object, observed.deployment, previous, error, log);
      if (approved && error instanceof StackOperationFailed && /violates plan/.test(error.message)) {
        // The program now asks for more than the approved plan allows: preview again.
        await this.refuse(object, approved.planId, `approval refused: the cluster no longer matches plan ${approved.planId} (${error.message}); a fresh preview was written`, log);
        return this.preview(object, stack, key, decision, observed, log);
      }
      throw await this.operationFailed(object, key, previous, observed.deployment, error, started, log, preview);
    }
    log.info("pulumi up succeeded", { operation: "up", durationMs: Date.now() - started, changes: operation.resourceChanges });
    const approvalLeft = await this.applied(object, stack, decision, operation, log, approved, removed);
    const settled = await this.settle(object, stack, key, appliedStack(object, stack, operation, approved), log);
    // The up succeeded and says so; the approval it used is removed by the next pass (see gated).
    return approvalLeft ? { outcome: "requeued", requeueAfterMs: approvalRetryMs } : settled;
  }

  /**
   * `up`, refreshed first when the stack's record cannot be trusted. An update that finds a child
   * gone which the state still records ("not found") is run again with a refresh: the state is
   * from a cluster or an object that no longer exists.
   */
  private async up(object: Workload, stack: string, refresh: boolean, log: Logger, approved?: Approved): Promise<StackOperation> {
    const run = (withRefresh: boolean) => this.deps.driver.up(stack, programFor(object), { refresh: withRefresh, ...(approved ? { plan: approved.planFile } : {}) });
    try {
      return await run(refresh);
    } catch (error) {
      if (refresh || approved || !(error instanceof StackOperationFailed) || !/not found/.test(error.message)) throw error;
      log.warn("the stack's state names resources that do not exist; refreshing and updating again", { error: error.message });
      return run(true);
    }
  }

  /**
   * After an `up`: the children as the API server has them now. A change made while or right after
   * the engine wrote them is drift, never taken for what was applied: it is repaired next.
   */
  private async settle(object: Workload, stack: string, key: string, stackStatus: StackStatus, log: Logger): Promise<HandlerResult> {
    const observed = await this.children.observe(object, true);
    if (observed.conflicts.length) return this.conflict(object, stack, key, observed, log, stackStatus);
    if (!observed.drift.length) {
      await this.report(object, observed.deployment, rolloutPhase(object, observed.deployment), stackStatus);
      return undefined;
    }
    const message = `the children changed while or after they were applied: ${describeDrift(observed.drift)}`;
    const { delayMs } = this.deps.backoff(key);
    log.warn("drift right after the update; repairing", { drift: observed.drift, retryInMs: delayMs });
    await this.report(object, observed.deployment, { kind: "progressing", reason: "DriftDetected", message }, stackStatus);
    throw new ReportedFailure("DriftDetected", message);
  }

  /**
   * Drift made by imperative edits becomes appstack's to undo (metadata only: who owns which field),
   * so that the repair, or the preview of it, can apply the manifest over it. For the repair itself
   * (`remove`), what others added, which Pulumi cannot see, is removed too; returns from how many children.
   */
  private async handOver(object: Workload, decision: Pending, observed: Observed, log: Logger, remove = false): Promise<number> {
    if (decision.action !== "repair") return 0;
    const handed = await this.children.handOverEdits(object, observed);
    if (handed) log.info("imperative edits handed over to appstack's field manager", { children: handed });
    const removed = remove ? await this.children.removeAdditions(object, observed) : 0;
    if (removed) log.info("additions removed by a server-side apply of the manifest", { children: removed });
    return removed;
  }

  /**
   * Every child the stack's state records is checked before the engine may update or delete it,
   * not only those the spec wants now: a child deleted by hand whose name someone else's object
   * took since (then dropped from the spec, or its object deleted) would otherwise be deleted by
   * `up` or `destroy` as the stack's own. Such an object leaves the stack's state, untouched.
   */
  private async dropForeign(object: Workload, stack: string, log: Logger): Promise<void> {
    const foreign = await this.children.foreignAmong(object, await this.deps.driver.recordedChildren(stack));
    if (!foreign.length) return;
    await this.deps.driver.dropResources(stack, foreign.map((f) => f.child));
    const named = foreign.map(({ child, controller }) => `${child.kind} ${child.namespace}/${child.name} (${controller ? `controlled by ${controller}` : "not created by appstack"})`);
    log.warn("the stack's state names objects that are not this object's; dropped from the state, left untouched", { dropped: named });
    this.deps.events.record(object, "Warning", "ForeignResourceDropped", `${named.join(" and ")} took the name of a child this ${object.kind} had; it was dropped from the stack's state, and appstack neither changes nor deletes it`);
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

  /**
   * Stalled with the engine's message, a Warning Event, and when the next attempt comes; returns
   * the error to throw. An operation this replica stopped to hand over did not fail: the status
   * goes on saying it is being applied, for the next leader to carry on.
   */
  private async operationFailed(object: Workload, key: string, previous: StackStatus, deployment: V1Deployment | undefined, error: unknown, started: number, log: Logger, preview?: PreviewStatus): Promise<Error> {
    if (error instanceof OperationInterrupted) {
      log.warn("operation stopped for the handover; the next leader carries on", { durationMs: Date.now() - started, error: error.message });
      return error;
    }
    const operation = error instanceof StackOperationFailed ? error.operation : undefined;
    const message = operation?.message ?? (error instanceof Error ? error.message : String(error));
    const kind = operation?.kind ?? "up";
    const reason = error instanceof OperationTimedOut ? "OperationTimedOut" : isStateUnwritable(message) ? "StateUnwritable" : kind === "preview" ? "PreviewFailed" : "StackUpdateFailed";
    const { attempt, delayMs } = this.deps.backoff(key);
    log.error(`pulumi ${kind} failed`, { operation: kind, durationMs: Date.now() - started, attempt, retryInMs: delayMs, error: message });
    this.deps.events.record(object, "Warning", reason, message);
    const stack = retrying(withOperationOf(previous, error), attempt, delayMs);
    // Best effort: the retry matters more than the report of the failure.
    await this.report(object, deployment, { kind: "stalled", reason, message }, stack, preview).catch(() => undefined);
    return new ReportedFailure(reason, message);
  }

  /** A child of the same name is someone else's: nothing is written; retried with backoff until it is gone. */
  private async conflict(object: Workload, stack: string, key: string, observed: Observed, log: Logger, stackStatus?: StackStatus): Promise<never> {
    const message = conflictMessage(object, observed);
    const { attempt, delayMs } = this.deps.backoff(key);
    log.warn("resource conflict", { conflicts: observed.conflicts.map((c) => `${c.child.kind}/${c.child.name}`), attempt, retryInMs: delayMs });
    this.deps.events.record(object, "Warning", "ResourceConflict", message);
    await this.report(object, undefined, { kind: "stalled", reason: "ResourceConflict", message }, retrying(stackStatus ?? object.status?.stack ?? { name: stack }, attempt, delayMs));
    throw new ReportedFailure("ResourceConflict", message);
  }

  /** A failure nobody reported yet (an API error, a bug): logged, and shown on the object where there is one. */
  private async unexpected(key: string, error: unknown): Promise<void> {
    const reason = errorReason(error);
    const message = `${reason}: ${briefError(error)}`;
    const { attempt, delayMs } = this.deps.backoff(key);
    this.deps.log.error("reconcile failed", { object: key, reason, attempt, retryInMs: delayMs, error: briefError(error), ...(reason === "InternalError" && error instanceof Error ? { stack: error.stack } : {}) });
    const objectKey = parseKey(key);
    const object = this.deps.watcher.workload(objectKey.kind, objectKey.namespace, objectKey.name);
    if (!object) return;
    this.deps.events.record(object, "Warning", "ReconcileFailed", message);
    const stack = retrying(object.status?.stack ?? { name: stackName(objectKey.kind, objectKey.namespace, objectKey.name) }, attempt, delayMs);
    const deployment = (await this.children.observe(object).catch(() => undefined))?.deployment;
    await this.report(object, deployment, { kind: "stalled", reason: "ReconcileFailed", message }, stack).catch(() => undefined);
  }

  /** updatePolicy Preview: nothing runs `up` unless a person approved the plan a preview saved. */
  private async gated(object: Workload, stack: string, key: string, decision: Decision, observed: Observed, log: Logger): Promise<HandlerResult> {
    const approval = await this.unusedApproval(object);
    const basis = previewBasis(object.metadata.generation ?? 0, observed.drift);
    const approvedPlan = await this.deps.plans.find(stack, approval);
    const next = gate({ decision, basis, preview: object.status?.preview, approval, findPlan: (id) => (id === approval ? approvedPlan : undefined) });
    if (approval !== undefined && next.action !== "apply") await this.refuse(object, approval, next.refused, log);
    if (next.action === "apply" && decision.action !== "none") return this.apply(object, stack, key, decision, observed, log, next);
    if (next.action === "preview" && decision.action !== "none") return this.preview(object, stack, key, decision, observed, log);
    const preview = next.action === "wait" ? object.status?.preview : undefined;
    if (!preview) await this.deps.plans.discard(stack);
    await this.report(object, observed.deployment, preview ? awaiting(object, preview) : rolloutPhase(object, observed.deployment), object.status?.stack ?? { name: stack }, preview);
    return undefined;
  }

  /**
   * The approval on the object, unless its plan is the one applied last: the removal after that
   * `up` failed, and it is removed now instead of refused (plan ids are digests of plans that
   * carry their time, so no later preview has this id).
   */
  private async unusedApproval(object: Workload): Promise<string | undefined> {
    const approval = approvalOf(object);
    if (approval === undefined || approval !== object.status?.stack?.appliedPlan) return approval;
    await consumeApproval(this.deps.clients, object, approval);
    return undefined;
  }

  /** Runs a preview that saves its plan, and writes it to status for a person to approve. */
  private async preview(object: Workload, stack: string, key: string, decision: Pending, observed: Observed, log: Logger): Promise<HandlerResult> {
    const previous: StackStatus = object.status?.stack ?? { name: stack };
    const basis = previewBasis(object.metadata.generation ?? 0, observed.drift);
    const draft = await this.deps.plans.draft(stack);
    await this.handOver(object, decision, observed, log);
    log.info("pulumi preview", { reason: decision.reason, refresh: refreshes(decision) });
    const started = Date.now();
    let planned: Awaited<ReturnType<StackDriver["preview"]>>;
    try {
      await this.dropForeign(object, stack, log);
      planned = await this.deps.driver.preview(stack, programFor(object), { refresh: refreshes(decision), plan: draft });
    } catch (error) {
      await this.deps.plans.discard(stack, draft);
      throw await this.operationFailed(object, key, previous, observed.deployment, error, started, log);
    }
    // What the approved repair removes beyond Pulumi's plan is part of what is approved.
    planned = { ...planned, ...withRemovals(planned, observed) };
    log.info("pulumi preview succeeded", { operation: "preview", durationMs: Date.now() - started, changes: planned.changes });
    const stackStatus: StackStatus = { name: stack, lastOperation: planned.operation, ...(previous.appliedFingerprint ? { appliedFingerprint: previous.appliedFingerprint } : {}), attempts: 0 };
    if (!hasChanges(planned.changes)) {
      // Nothing Pulumi manages would change (only updatePolicy did, say): record it as applied,
      // and let the live children say whether that is the truth.
      await this.deps.plans.discard(stack);
      return this.settle(object, stack, key, { ...stackStatus, appliedFingerprint: encodeApplied({ programVersion, generation: object.metadata.generation ?? 0 }) }, log);
    }
    const planId = await this.deps.plans.commit(stack, draft);
    const preview: PreviewStatus = { planId, generation: object.metadata.generation ?? 0, basis, reason: decision.reason, time: new Date().toISOString(), changes: planned.changes, steps: planned.steps };
    this.deps.events.record(object, "Normal", "ChangesPending", `plan ${planId} (${decision.reason}): ${describeSteps(planned.steps)}; approve with: ${approveCommand(object, planId)}`);
    await this.report(object, observed.deployment, awaiting(object, preview), stackStatus, preview);
    return undefined;
  }

  /** Says why an approval was not carried out (if it was not), and removes it. */
  private async refuse(object: Workload, approval: string, why: string | undefined, log: Logger): Promise<void> {
    if (why) {
      log.warn("approval refused", { approval, reason: why });
      this.deps.events.record(object, "Warning", "ApprovalRefused", why);
    }
    await consumeApproval(this.deps.clients, object, approval);
  }

  private async finalize(object: Workload, stack: string, key: string, log: Logger): Promise<HandlerResult> {
    if (!hasFinalizer(object)) return;
    const observed = await this.children.observe(object);
    await this.report(object, observed.deployment, { kind: "deleting", message: "destroying the stack" }, object.status?.stack ?? { name: stack }).catch(() => undefined);
    const started = Date.now();
    let forgotten = false;
    try {
      await this.dropForeign(object, stack, log);
      const operation = await this.deps.driver.destroy(stack);
      log.info("stack destroyed and removed", { operation: "destroy", durationMs: Date.now() - started, changes: operation?.resourceChanges });
      this.deps.events.record(object, "Normal", "StackDestroyed", operation ? `pulumi destroy: ${describeChanges(operation.resourceChanges, "done")}; stack removed` : "no stack to destroy");
    } catch (error) {
      const previous = object.status?.stack ?? { name: stack };
      if (error instanceof StackBusy) return this.locked(object, observed.deployment, previous, error, log);
      if (error instanceof OperationInterrupted) throw error; // still Deleting: the next leader destroys it
      const message = error instanceof Error ? error.message : String(error);
      const { attempt, delayMs } = this.deps.backoff(key);
      if (attempt < terminatingNamespaceAttempts || !(await this.namespaceTerminating(object.metadata.namespace))) {
        log.error("pulumi destroy failed", { operation: "destroy", attempt, retryInMs: delayMs, error: message });
        this.deps.events.record(object, "Warning", "DestroyFailed", message);
        // Stalled until the next attempt, not Deleting for ever: the engine's words say what to fix.
        await this.report(object, observed.deployment, { kind: "stalled", reason: "DestroyFailed", message }, retrying(withOperationOf(previous, error), attempt, delayMs)).catch(() => undefined);
        throw new ReportedFailure("DestroyFailed", message);
      }
      // The namespace takes the children with it; a stuck finalizer would hold it forever.
      log.warn("namespace is terminating; forgetting the stack instead of destroying it", { error: message });
      this.deps.events.record(object, "Warning", "StackForgotten", `destroy failed ${attempt} times while the namespace is terminating; the stack state was removed and the namespace deletion removes the children`);
      await this.deps.driver.forget(stack);
      forgotten = true;
    }
    await this.deps.plans.discard(stack);
    await removeFinalizer(this.deps.clients, object);
    this.written.delete(object.metadata.uid);
    return forgotten ? { outcome: "forgotten" } : undefined;
  }

  /**
   * Another engine holds the stack's lock: one of a previous leader that may still write it (frozen,
   * or cut off from the API server), or a person's `appstack pulumi`. Said on the object, since
   * only the holder's end (or a person) frees it; checked again shortly.
   */
  private async locked(object: Workload, deployment: V1Deployment | undefined, stack: StackStatus, error: StackBusy, log: Logger): Promise<HandlerResult> {
    log.info("stack locked by another engine; retrying", { error: error.message, retryInMs: busyRetryMs });
    this.deps.events.record(object, "Warning", "StackLocked", error.message);
    await this.report(object, deployment, { kind: "progressing", reason: "StackLocked", message: error.message }, stack).catch(() => undefined);
    return { outcome: "locked", requeueAfterMs: busyRetryMs };
  }

  private async report(object: Workload, deployment: V1Deployment | undefined, phase: Phase, stack: StackStatus, preview?: PreviewStatus): Promise<void> {
    const selector = podSelector(object);
    // Pods count only under the object's own Deployment: never another object's.
    const pods = deployment ? this.deps.watcher.podsOf(object.metadata.namespace, selector).filter((pod) => !pod.metadata?.deletionTimestamp) : [];
    const refined = withScheduling(phase, pods);
    // Operation failures record their own Events; a rollout that cannot go on is said here.
    if (refined.kind === "stalled" || (refined.kind === "progressing" && refined !== phase)) this.deps.events.record(object, "Warning", refined.reason, refined.message);
    const status = computeStatus({ object, deployment, pods, selector: selectorString(selector), phase: refined, stack, preview });
    try {
      if (await writeStatus(this.deps.clients, object, status)) this.written.set(object.metadata.uid, object.status!);
    } catch (error) {
      // The object was deleted under us: nothing left to report on.
      if (!isNotFound(error)) throw error;
    }
  }

  private async namespaceTerminating(namespace: string): Promise<boolean> {
    return namespaceTerminating(this.deps.clients.core, namespace, this.deps.log);
  }
}
