// The reconciler: one object at a time, make the cluster match the spec through Pulumi when
// something changed, and report what the live children say either way.
import type { V1Deployment } from "@kubernetes/client-node";
import { podSelector } from "../components/manifests.ts";
import { selectorString } from "../components/metadata.ts";
import { approveAnnotation, type MemcachedStatus, type PreviewStatus, type StackOperation, type StackStatus, type Workload } from "../crds/types.ts";
import { approvalOf, consumeApproval, gate } from "./approval.ts";
import { Children } from "./children.ts";
import { decide, decodeApplied, previewBasis, type Decision } from "./drift.ts";
import type { EventRecorder } from "./events.ts";
import { addFinalizer, hasFinalizer, removeFinalizer } from "./finalizer.ts";
import { isNotFound, parseKey, readWorkload, type KubeClients } from "./kube.ts";
import type { Logger } from "./log.ts";
import type { PlanStore } from "./plans.ts";
import { describeChanges, describeSteps, hasChanges } from "./preview-steps.ts";
import { programFor } from "./programs.ts";
import type { Backoff, HandlerResult } from "./queue.ts";
import { stackName } from "./stack-names.ts";
import { StackBusy, StackOperationFailed, type StackDriver } from "./stacks.ts";
import { computeStatus, rolloutPhase, writeStatus } from "./status.ts";
import type { Phase } from "./conditions.ts";
import type { Watcher } from "./watch.ts";

const busyRetryMs = 5_000;
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

export class Reconciler {
  /** The last status written per object: fresher than the watch cache right after a write. */
  private readonly written = new Map<string, MemcachedStatus>();

  private readonly children: Children;

  constructor(private readonly deps: ReconcilerDeps) {
    this.children = new Children(deps.clients, deps.watcher);
  }

  async reconcile(key: string): Promise<HandlerResult> {
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
    const object = { ...cached, status: this.written.get(cached.metadata.uid) ?? cached.status } as Workload;
    const log = this.deps.log.with({ object: key, stack });
    if (object.metadata.deletionTimestamp) return this.finalize(object, stack, key, log);
    if (!hasFinalizer(object)) object.metadata = (await addFinalizer(this.deps.clients, object)).metadata;

    const deployment = await this.children.deployment(object);
    const decision = decide(object.metadata.generation ?? 0, decodeApplied(object.status?.stack?.appliedFingerprint), this.children.identities(object, deployment));
    if (object.spec.updatePolicy === "Preview") return this.gated(object, stack, key, decision, deployment, log);
    if (decision.action === "none") {
      await this.report(object, deployment, rolloutPhase(object, deployment), object.status?.stack ?? { name: stack }, true);
      return;
    }
    return this.apply(object, stack, key, decision, log);
  }

  private async apply(object: Workload, stack: string, key: string, decision: Pending, log: Logger, approved?: Approved): Promise<HandlerResult> {
    const previous: StackStatus = object.status?.stack ?? { name: stack };
    // An approved plan stays in status until it is applied: a failed attempt retries the same plan.
    const preview = approved ? object.status?.preview : undefined;
    const deploymentBefore = this.deps.watcher.deployment(object.metadata.namespace, object.metadata.name);
    const applying = approved ? `pulumi up of approved plan ${approved.planId}` : `pulumi up: ${decision.reason}`;
    await this.report(object, deploymentBefore, { kind: "progressing", reason: "Applying", message: applying }, previous, false, preview);
    log.info("pulumi up", { reason: decision.reason, refresh: decision.action === "repair", plan: approved?.planId });
    const started = Date.now();
    let operation: StackOperation;
    try {
      operation = await this.deps.driver.up(stack, programFor(object), { refresh: decision.action === "repair", ...(approved ? { plan: approved.planFile } : {}) });
    } catch (error) {
      if (error instanceof StackBusy) {
        log.info("stack busy; retrying", { retryInMs: busyRetryMs });
        return { requeueAfterMs: busyRetryMs };
      }
      if (approved && error instanceof StackOperationFailed && /violates plan/.test(error.message)) {
        // The program now asks for more than the approved plan allows: preview again.
        await this.refuse(object, approved.planId, `approval refused: the cluster no longer matches plan ${approved.planId} (${error.message}); a fresh preview was written`, log);
        return this.preview(object, stack, key, decision, log);
      }
      await this.operationFailed(object, key, previous, deploymentBefore, error, started, log, preview);
      throw error;
    }
    log.info("pulumi up succeeded", { operation: "up", durationMs: Date.now() - started, changes: operation.resourceChanges });
    await this.applied(object, stack, decision, operation, approved);
    // Read back from the API server, not the cache: the record must name what `up` just made.
    const deployment = await this.children.readDeployment(object);
    const appliedFingerprint = await this.children.applied(object, deployment);
    await this.report(object, deployment, rolloutPhase(object, deployment), { name: stack, lastOperation: operation, appliedFingerprint, attempts: 0 }, true);
    return undefined;
  }

  /** Says what a successful `up` did; an approval it carried out is used up. */
  private async applied(object: Workload, stack: string, decision: Pending, operation: StackOperation, approved?: Approved): Promise<void> {
    const changes = describeChanges(operation.resourceChanges, "done");
    if (approved) {
      await consumeApproval(this.deps.clients, object, approved.planId);
      this.deps.plans.discard(stack);
      this.deps.events.record(object, "Normal", "PlanApplied", `approved plan ${approved.planId} applied by pulumi up (${changes})`);
    } else if (decision.action === "repair") this.deps.events.record(object, "Normal", "DriftRepaired", `${decision.reason}; repaired by pulumi up (${changes})`);
    else this.deps.events.record(object, "Normal", "StackUpdated", `pulumi up: ${changes}`);
  }

  /** Stalled with the engine's message, a Warning Event, and when the next attempt comes. */
  private async operationFailed(object: Workload, key: string, previous: StackStatus, deployment: V1Deployment | undefined, error: unknown, started: number, log: Logger, preview?: PreviewStatus): Promise<void> {
    const operation = error instanceof StackOperationFailed ? error.operation : undefined;
    const message = operation?.message ?? (error instanceof Error ? error.message : String(error));
    const kind = operation?.kind ?? "up";
    const { attempt, delayMs } = this.deps.backoff(key);
    log.error(`pulumi ${kind} failed`, { operation: kind, durationMs: Date.now() - started, attempt, retryInMs: delayMs, error: message });
    this.deps.events.record(object, "Warning", kind === "preview" ? "PreviewFailed" : "StackUpdateFailed", message);
    const stack: StackStatus = {
      ...previous,
      ...(operation ? { lastOperation: operation } : {}),
      attempts: attempt,
      nextRetryTime: new Date(Date.now() + delayMs).toISOString(),
    };
    // Best effort: the retry matters more than the report of the failure.
    await this.report(object, deployment, { kind: "stalled", reason: kind === "preview" ? "PreviewFailed" : "StackUpdateFailed", message }, stack, false, preview).catch(() => undefined);
  }

  /** updatePolicy Preview: nothing runs `up` unless a person approved the plan a preview saved. */
  private async gated(object: Workload, stack: string, key: string, decision: Decision, deployment: V1Deployment | undefined, log: Logger): Promise<HandlerResult> {
    const approval = approvalOf(object);
    const basis = previewBasis(object.metadata.generation ?? 0, this.children.identities(object, deployment));
    const next = gate({ decision, basis, preview: object.status?.preview, approval, findPlan: (id) => this.deps.plans.find(stack, id) });
    if (approval !== undefined && next.action !== "apply") await this.refuse(object, approval, next.refused, log);
    if (next.action === "apply" && decision.action !== "none") return this.apply(object, stack, key, decision, log, next);
    if (next.action === "preview" && decision.action !== "none") return this.preview(object, stack, key, decision, log);
    const preview = next.action === "wait" ? object.status?.preview : undefined;
    if (!preview) this.deps.plans.discard(stack);
    await this.report(object, deployment, preview ? awaiting(object, preview) : rolloutPhase(object, deployment), object.status?.stack ?? { name: stack }, true, preview);
    return undefined;
  }

  /** Runs a preview that saves its plan, and writes it to status for a person to approve. */
  private async preview(object: Workload, stack: string, key: string, decision: Pending, log: Logger): Promise<HandlerResult> {
    const previous: StackStatus = object.status?.stack ?? { name: stack };
    const deployment = await this.children.deployment(object);
    const basis = previewBasis(object.metadata.generation ?? 0, this.children.identities(object, deployment));
    const draft = this.deps.plans.draft(stack);
    log.info("pulumi preview", { reason: decision.reason, refresh: decision.action === "repair" });
    const started = Date.now();
    let planned: Awaited<ReturnType<StackDriver["preview"]>>;
    try {
      planned = await this.deps.driver.preview(stack, programFor(object), { refresh: decision.action === "repair", plan: draft });
    } catch (error) {
      this.deps.plans.discard(stack, draft);
      await this.operationFailed(object, key, previous, deployment, error, started, log);
      throw error;
    }
    log.info("pulumi preview succeeded", { operation: "preview", durationMs: Date.now() - started, changes: planned.changes });
    const stackStatus: StackStatus = { name: stack, lastOperation: planned.operation, ...(previous.appliedFingerprint ? { appliedFingerprint: previous.appliedFingerprint } : {}), attempts: 0 };
    if (!hasChanges(planned.changes)) {
      // Nothing Pulumi manages would change (only updatePolicy did, say): record it as applied.
      this.deps.plans.discard(stack);
      const appliedFingerprint = (await this.children.applied(object, deployment)) ?? previous.appliedFingerprint;
      await this.report(object, deployment, rolloutPhase(object, deployment), { ...stackStatus, ...(appliedFingerprint ? { appliedFingerprint } : {}) }, true);
      return undefined;
    }
    const planId = this.deps.plans.commit(stack, draft);
    const preview: PreviewStatus = { planId, generation: object.metadata.generation ?? 0, basis, reason: decision.reason, time: new Date().toISOString(), changes: planned.changes, steps: planned.steps };
    this.deps.events.record(object, "Normal", "ChangesPending", `plan ${planId} (${decision.reason}): ${describeSteps(planned.steps)}; approve with: ${approveCommand(object, planId)}`);
    await this.report(object, deployment, awaiting(object, preview), stackStatus, true, preview);
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
    await this.report(object, this.deps.watcher.deployment(object.metadata.namespace, object.metadata.name), { kind: "deleting", message: "destroying the stack" }, object.status?.stack ?? { name: stack }, false).catch(() => undefined);
    const started = Date.now();
    try {
      const operation = await this.deps.driver.destroy(stack);
      log.info("stack destroyed and removed", { operation: "destroy", durationMs: Date.now() - started, changes: operation?.resourceChanges });
      this.deps.events.record(object, "Normal", "StackDestroyed", operation ? `pulumi destroy: ${describeChanges(operation.resourceChanges, "done")}; stack removed` : "no stack to destroy");
    } catch (error) {
      if (error instanceof StackBusy) return { requeueAfterMs: busyRetryMs };
      const message = error instanceof Error ? error.message : String(error);
      const { attempt } = this.deps.backoff(key);
      if (attempt < terminatingNamespaceAttempts || !(await this.namespaceTerminating(object.metadata.namespace))) {
        log.error("pulumi destroy failed", { operation: "destroy", attempt, error: message });
        this.deps.events.record(object, "Warning", "DestroyFailed", message);
        throw error;
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

  private async report(object: Workload, deployment: V1Deployment | undefined, phase: Phase, stack: StackStatus, observed: boolean, preview?: PreviewStatus): Promise<void> {
    const selector = podSelector(object);
    const pods = this.deps.watcher.podsOf(object.metadata.namespace, selector).filter((pod) => !pod.metadata?.deletionTimestamp);
    const status = computeStatus({ object, deployment, pods, selector: selectorString(selector), phase, stack, preview, observed: observed || object.status?.observedGeneration === object.metadata.generation });
    try {
      if (await writeStatus(this.deps.clients, object, status)) this.written.set(object.metadata.uid, object.status!);
    } catch (error) {
      // The object was deleted under us: nothing left to report on.
      if (!isNotFound(error)) throw error;
    }
  }

  private async namespaceTerminating(namespace: string): Promise<boolean> {
    const ns = await this.deps.clients.core.readNamespace({ name: namespace }).catch(() => undefined);
    return ns?.status?.phase === "Terminating";
  }
}
