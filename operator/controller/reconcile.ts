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
import { OperationInterrupted, OperationTimedOut, StackBusy, StackOperationFailed, type StackDriver } from "../pulumi/stacks.ts";
import { computeStatus, rolloutPhase, withScheduling, writeStatus } from "./status.ts";
import type { Watcher } from "./watch.ts";

const busyRetryMs = 5_000;
/** An App and a Memcached of one name want the same children: one reconciles at a time. */
const sameNameRetryMs = 1_000;
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
      if (!(error instanceof ReportedFailure) && !(error instanceof OperationInterrupted)) await this.unexpected(key, error);
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
      if (await readWorkload(this.deps.clients, objectKey)) return { requeueAfterMs: busyRetryMs };
      this.deps.log.warn("object deleted without its finalizer; removing its stack state", { object: key, stack });
      await this.deps.driver.forget(stack);
      return;
    }
    const claim = `${namespace}/${name}`;
    if ((this.claimed.get(claim) ?? key) !== key) return { requeueAfterMs: sameNameRetryMs };
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
    if (decision.action === "none" && this.deps.driver.hasPendingOperations(stack)) return this.finishInterrupted(object, stack, key, observed, log);
    if (object.spec.updatePolicy === "Preview") return this.gated(object, stack, key, decision, observed, log);
    if (decision.action === "none") {
      await this.report(object, observed.deployment, rolloutPhase(object, observed.deployment), object.status?.stack ?? { name: stack }, true);
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
    await this.report(object, observed.deployment, { kind: "progressing", reason: decision.action === "repair" ? "RepairingDrift" : "Applying", message: applying }, previous, false, preview);
    await this.handOver(object, decision, observed, log);
    log.info("pulumi up", { reason: decision.reason, refresh: refreshes(decision), plan: approved?.planId });
    const started = Date.now();
    let operation: StackOperation;
    try {
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
    await this.applied(object, stack, decision, operation, approved);
    return this.settle(object, stack, key, { name: stack, lastOperation: operation, appliedFingerprint: encodeApplied({ programVersion, generation: object.metadata.generation ?? 0 }), attempts: 0 }, log);
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
      await this.report(object, observed.deployment, rolloutPhase(object, observed.deployment), stackStatus, true);
      return undefined;
    }
    const message = `the children changed while or after they were applied: ${describeDrift(observed.drift)}`;
    const { delayMs } = this.deps.backoff(key);
    log.warn("drift right after the update; repairing", { drift: observed.drift, retryInMs: delayMs });
    await this.report(object, observed.deployment, { kind: "progressing", reason: "DriftDetected", message }, stackStatus, true);
    throw new ReportedFailure("DriftDetected", message);
  }

  /**
   * Drift made by imperative edits becomes appstack's to undo (metadata only: who owns which field),
   * so that the repair, or the preview of it, can apply the manifest over it.
   */
  private async handOver(object: Workload, decision: Pending, observed: Observed, log: Logger): Promise<void> {
    if (decision.action !== "repair") return;
    const handed = await this.children.handOverEdits(object, observed);
    if (handed) log.info("imperative edits handed over to appstack's field manager", { children: handed });
  }

  /** Says what a successful `up` did; an approval it carried out is used up. */
  private async applied(object: Workload, stack: string, decision: Pending, operation: StackOperation, approved?: Approved): Promise<void> {
    const changes = describeChanges(operation.resourceChanges, "done");
    if (approved) {
      await consumeApproval(this.deps.clients, object, approved.planId);
      this.deps.plans.discard(stack);
      this.deps.events.record(object, "Normal", "PlanApplied", `approved plan ${approved.planId} applied by pulumi up (${changes})`);
    } else if (decision.action === "repair") this.deps.events.record(object, "Normal", "DriftRepaired", `${decision.reason}; repaired by pulumi up (${changes})`);
    else this.deps.events.record(object, "Normal", "StackUpdated", `${decision.reason}; applied by pulumi up (${changes})`);
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
    const stack = retrying({ ...previous, ...(operation ? { lastOperation: operation } : {}) }, attempt, delayMs);
    // Best effort: the retry matters more than the report of the failure.
    await this.report(object, deployment, { kind: "stalled", reason, message }, stack, false, preview).catch(() => undefined);
    return new ReportedFailure(reason, message);
  }

  /** A child of the same name is someone else's: nothing is written; retried with backoff until it is gone. */
  private async conflict(object: Workload, stack: string, key: string, observed: Observed, log: Logger, stackStatus?: StackStatus): Promise<never> {
    const message = conflictMessage(object, observed);
    const { attempt, delayMs } = this.deps.backoff(key);
    log.warn("resource conflict", { conflicts: observed.conflicts.map((c) => `${c.child.kind}/${c.child.name}`), attempt, retryInMs: delayMs });
    this.deps.events.record(object, "Warning", "ResourceConflict", message);
    await this.report(object, undefined, { kind: "stalled", reason: "ResourceConflict", message }, retrying(stackStatus ?? object.status?.stack ?? { name: stack }, attempt, delayMs), false);
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
    await this.report(object, deployment, { kind: "stalled", reason: "ReconcileFailed", message }, stack, false).catch(() => undefined);
  }

  /** updatePolicy Preview: nothing runs `up` unless a person approved the plan a preview saved. */
  private async gated(object: Workload, stack: string, key: string, decision: Decision, observed: Observed, log: Logger): Promise<HandlerResult> {
    const approval = approvalOf(object);
    const basis = previewBasis(object.metadata.generation ?? 0, observed.drift);
    const next = gate({ decision, basis, preview: object.status?.preview, approval, findPlan: (id) => this.deps.plans.find(stack, id) });
    if (approval !== undefined && next.action !== "apply") await this.refuse(object, approval, next.refused, log);
    if (next.action === "apply" && decision.action !== "none") return this.apply(object, stack, key, decision, observed, log, next);
    if (next.action === "preview" && decision.action !== "none") return this.preview(object, stack, key, decision, observed, log);
    const preview = next.action === "wait" ? object.status?.preview : undefined;
    if (!preview) this.deps.plans.discard(stack);
    await this.report(object, observed.deployment, preview ? awaiting(object, preview) : rolloutPhase(object, observed.deployment), object.status?.stack ?? { name: stack }, true, preview);
    return undefined;
  }

  /** Runs a preview that saves its plan, and writes it to status for a person to approve. */
  private async preview(object: Workload, stack: string, key: string, decision: Pending, observed: Observed, log: Logger): Promise<HandlerResult> {
    const previous: StackStatus = object.status?.stack ?? { name: stack };
    const basis = previewBasis(object.metadata.generation ?? 0, observed.drift);
    const draft = this.deps.plans.draft(stack);
    await this.handOver(object, decision, observed, log);
    log.info("pulumi preview", { reason: decision.reason, refresh: refreshes(decision) });
    const started = Date.now();
    let planned: Awaited<ReturnType<StackDriver["preview"]>>;
    try {
      planned = await this.deps.driver.preview(stack, programFor(object), { refresh: refreshes(decision), plan: draft });
    } catch (error) {
      this.deps.plans.discard(stack, draft);
      throw await this.operationFailed(object, key, previous, observed.deployment, error, started, log);
    }
    log.info("pulumi preview succeeded", { operation: "preview", durationMs: Date.now() - started, changes: planned.changes });
    const stackStatus: StackStatus = { name: stack, lastOperation: planned.operation, ...(previous.appliedFingerprint ? { appliedFingerprint: previous.appliedFingerprint } : {}), attempts: 0 };
    if (!hasChanges(planned.changes)) {
      // Nothing Pulumi manages would change (only updatePolicy did, say): record it as applied,
      // and let the live children say whether that is the truth.
      this.deps.plans.discard(stack);
      return this.settle(object, stack, key, { ...stackStatus, appliedFingerprint: encodeApplied({ programVersion, generation: object.metadata.generation ?? 0 }) }, log);
    }
    const planId = this.deps.plans.commit(stack, draft);
    const preview: PreviewStatus = { planId, generation: object.metadata.generation ?? 0, basis, reason: decision.reason, time: new Date().toISOString(), changes: planned.changes, steps: planned.steps };
    this.deps.events.record(object, "Normal", "ChangesPending", `plan ${planId} (${decision.reason}): ${describeSteps(planned.steps)}; approve with: ${approveCommand(object, planId)}`);
    await this.report(object, observed.deployment, awaiting(object, preview), stackStatus, true, preview);
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
    await this.report(object, observed.deployment, { kind: "deleting", message: "destroying the stack" }, object.status?.stack ?? { name: stack }, false).catch(() => undefined);
    const started = Date.now();
    try {
      // A child of this name that someone else made since is not ours to delete: out of the stack first.
      if (observed.conflicts.length) await this.deps.driver.dropResources(stack, observed.conflicts.map((c) => ({ kind: c.child.kind, namespace: object.metadata.namespace, name: c.child.name })));
      const operation = await this.deps.driver.destroy(stack);
      log.info("stack destroyed and removed", { operation: "destroy", durationMs: Date.now() - started, changes: operation?.resourceChanges });
      this.deps.events.record(object, "Normal", "StackDestroyed", operation ? `pulumi destroy: ${describeChanges(operation.resourceChanges, "done")}; stack removed` : "no stack to destroy");
    } catch (error) {
      if (error instanceof StackBusy) return this.locked(object, observed.deployment, object.status?.stack ?? { name: stack }, error, log);
      if (error instanceof OperationInterrupted) throw error; // still Deleting: the next leader destroys it
      const message = error instanceof Error ? error.message : String(error);
      const { attempt } = this.deps.backoff(key);
      if (attempt < terminatingNamespaceAttempts || !(await this.namespaceTerminating(object.metadata.namespace))) {
        log.error("pulumi destroy failed", { operation: "destroy", attempt, error: message });
        this.deps.events.record(object, "Warning", "DestroyFailed", message);
        throw new ReportedFailure("DestroyFailed", message);
      }
      // The namespace takes the children with it; a stuck finalizer would hold it forever.
      log.warn("namespace is terminating; forgetting the stack instead of destroying it", { error: message });
      this.deps.events.record(object, "Warning", "StackForgotten", `destroy failed ${attempt} times while the namespace is terminating; the stack state was removed and the namespace deletion removes the children`);
      await this.deps.driver.forget(stack);
    }
    this.deps.plans.discard(stack);
    await removeFinalizer(this.deps.clients, object);
    this.written.delete(object.metadata.uid);
    return undefined;
  }

  /**
   * Another engine holds the stack's lock: one of a previous leader that may still write it (frozen,
   * or cut off from the API server), or a person's `appstack pulumi`. Said on the object, since
   * only the holder's end (or a person) frees it; checked again shortly.
   */
  private async locked(object: Workload, deployment: V1Deployment | undefined, stack: StackStatus, error: StackBusy, log: Logger): Promise<HandlerResult> {
    log.info("stack locked by another engine; retrying", { error: error.message, retryInMs: busyRetryMs });
    this.deps.events.record(object, "Warning", "StackLocked", error.message);
    await this.report(object, deployment, { kind: "progressing", reason: "StackLocked", message: error.message }, stack, false).catch(() => undefined);
    return { requeueAfterMs: busyRetryMs };
  }

  private async report(object: Workload, deployment: V1Deployment | undefined, phase: Phase, stack: StackStatus, observed: boolean, preview?: PreviewStatus): Promise<void> {
    const selector = podSelector(object);
    // Pods count only under the object's own Deployment: never another object's.
    const pods = deployment ? this.deps.watcher.podsOf(object.metadata.namespace, selector).filter((pod) => !pod.metadata?.deletionTimestamp) : [];
    const refined = withScheduling(phase, pods);
    // Operation failures record their own Events; a rollout that cannot go on is said here.
    if (refined.kind === "stalled" || (refined.kind === "progressing" && refined !== phase)) this.deps.events.record(object, "Warning", refined.reason, refined.message);
    const status = computeStatus({ object, deployment, pods, selector: selectorString(selector), phase: refined, stack, preview, observed: observed || object.status?.observedGeneration === object.metadata.generation });
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
