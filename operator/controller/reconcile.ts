// The reconciler: one object at a time, make the cluster match the spec through Pulumi when
// something differs, and report what the live children say either way. It writes only children
// that are the object's own: a child of the same name that someone else made is a conflict.
// This file dispatches; its parts do the work: an update (update.ts), a preview for approval
// (previewing.ts), a deletion (deletion.ts), what the engine may write (ownership.ts), what is
// said on the object (reporting.ts), a suspended object (suspension.ts), a person's request to
// reconcile now (reconcile-request.ts) and a new spec that waits for other objects (dependencies.ts).
import type { StackStatus, Workload } from "../../crds/types.ts";
import { gate } from "./approval.ts";
import { Children, type Observed } from "./children.ts";
import { excludedPhase } from "./excluded-namespaces.ts";
import { dependenciesOf, dependencyKey, dependencyPhase, holdsApply, type Lookup } from "./dependencies.ts";
import { Deletion } from "./deletion.ts";
import { appliedNow, decide, decodeApplied, encodeApplied, previewBasis, programVersionOf, specDigest, type Applied, type Decision } from "./drift.ts";
import { ReportedFailure } from "./errors.ts";
import type { EventRecorder } from "./events.ts";
import { addFinalizer, hasFinalizer } from "./finalizer.ts";
import type { BindingGuard } from "./binding-guard.ts";
import { Ownership } from "./ownership.ts";
import type { ShardFence } from "./shard-fence.ts";
import { awaiting, Previewing } from "./previewing.ts";
import { maxUnreadableRetryMs } from "./namespace-availability.ts";
import { busyRetryMs, Reporter } from "./reporting.ts";
import { pendingRequest, requestReason, withRequest } from "./reconcile-request.ts";
import { isSuspended, suspendedPhase } from "./suspension.ts";
import { Update } from "./update.ts";
import { isConflict, parseKey, readWorkload, type KubeClients } from "../kube/clients.ts";
import { WriteFenced } from "../kube/write-fence.ts";
import { failpoint } from "../base/failpoints.ts";
import type { Logger } from "../base/log.ts";
import type { PlanStore } from "../pulumi/plans.ts";
import { programFor } from "../pulumi/programs.ts";
import { updateMessage } from "../pulumi/update-messages.ts";
import type { Backoff, HandlerResult } from "./queue.ts";
import { stackName } from "../pulumi/stack-names.ts";
import { OperationInterrupted, StackBusy } from "../pulumi/stack-errors.ts";
import type { StackDriver } from "../pulumi/stacks.ts";
import { childrenPhase } from "./child-readiness.ts";
import { defaultPodStartTimeoutMs, stackStatusOf } from "./status.ts";
import { kindRefusal } from "./kind-refusal.ts";
import { defaultProxySyncMs } from "./service-endpoints.ts";
import { actingUser, type Tenancy } from "./tenancy.ts";
import type { Watcher } from "./watch.ts";

/** An App and a Memcached of one name want the same children: one reconciles at a time. */
const sameNameRetryMs = 1_000;

/** A write refused because the object changed since the cache read it: tried again once the cache has caught up. */
const conflictRetryMs = 1_000;

/**
 * Sharded, a dependency another replica owns is not in this replica's caches, and its changes
 * queue nothing here: it is read from the API server, and read again this often while waited for.
 */
const otherShardDependencyRecheckMs = 10_000;

/** The most objects a dependsOn chain is followed through, in search of a cycle. */
const maxDependencyGraph = 256;

export interface ReconcilerDeps {
  readonly clients: KubeClients;
  readonly watcher: Watcher;
  readonly driver: StackDriver;
  readonly plans: PlanStore;
  readonly events: EventRecorder;
  readonly log: Logger;
  readonly backoff: (key: string) => Backoff;
  readonly bindingGuard: BindingGuard;
  /** Sharded (docs/sharding.md): whether this replica may act on an object, checked before anything else. */
  readonly shard?: ShardFence;
  /** How long a pod may fail to start before its object is Stalled (APPSTACK_POD_START_TIMEOUT_SECONDS); two minutes by default. */
  readonly podStartTimeoutMs?: number;
  /** How long Ready waits for service proxies to apply a change of EndpointSlices (APPSTACK_PROXY_SYNC_MS); kube-proxy's default minSyncPeriod by default. */
  readonly proxySyncMs?: number;
  /** Tenant identities (tenancy.ts, APPSTACK_DEFAULT_SERVICE_ACCOUNT): undefined, the operator's own rights write the children. */
  readonly tenancy?: Tenancy | undefined;
  /** Namespaces the operator never acts in (excluded-namespaces.ts, APPSTACK_EXCLUDED_NAMESPACES). */
  readonly excludedNamespaces?: ReadonlySet<string>;
}

/**
 * What the object's status records as applied, as it stands for its generation now, and the stack
 * report that says so: a generation that changed nothing the children are made from (spec.suspend
 * alone) is recorded as applied as it is (drift.ts appliedNow).
 */
function appliedState(object: Workload, stack: string): { applied: Applied | undefined; current: StackStatus } {
  const recorded = decodeApplied(object.status?.stack?.appliedFingerprint);
  const applied = appliedNow(recorded, object.metadata.generation ?? 0, specDigest(object.spec), programVersionOf(object.kind));
  const current = stackStatusOf(object, stack);
  return { applied, current: applied && applied !== recorded ? { ...current, appliedFingerprint: encodeApplied(applied) } : current };
}

export class Reconciler {
  /** namespace/name -> the key reconciling now: the children's names are claimed one object at a time. */
  private readonly claimed = new Map<string, string>();

  private readonly children: Children;
  private readonly reporter: Reporter;
  private readonly update: Update;
  private readonly previewing: Previewing;
  private readonly deletion: Deletion;

  private readonly deps: ReconcilerDeps;

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
    const { clients, watcher, driver, plans, events, log, backoff, bindingGuard, podStartTimeoutMs = defaultPodStartTimeoutMs, proxySyncMs = defaultProxySyncMs, tenancy } = deps;
    const children = new Children(clients, watcher, tenancy);
    const reporter = new Reporter({ clients, watcher, children, events, log, backoff, podStartTimeoutMs, proxySyncMs, tenancy });
    const ownership = new Ownership({ children, driver, events });
    this.children = children;
    this.reporter = reporter;
    this.previewing = new Previewing({ clients, driver, plans, events, ownership, reporter, tenancy });
    this.update = new Update({ clients, driver, plans, events, ownership, reporter, previewing: this.previewing, tenancy });
    this.deletion = new Deletion({ clients, driver, plans, events, backoff, children, ownership, reporter, bindingGuard, tenancy });
  }

  /** Reconciles one key; any failure is logged and shown on the object before the queue retries it. */
  async reconcile(key: string): Promise<HandlerResult> {
    try {
      return await this.reconcileKey(key);
    } catch (error) {
      // Stopped for the handover, or a write refused because the shard lease lapsed: no failure,
      // and nothing to retry here.
      if (error instanceof OperationInterrupted || error instanceof WriteFenced) return { outcome: "interrupted" };
      if (!(error instanceof ReportedFailure)) await this.reporter.unexpected(key, error);
      throw error;
    }
  }

  private async reconcileKey(key: string): Promise<HandlerResult> {
    const objectKey = parseKey(key);
    const { kind, namespace, name } = objectKey;
    const stack = stackName(kind, namespace, name);
    // Its caches are not whole while its namespace answers 403 (deleted, its RoleBinding gone):
    // nothing is decided from them. The watcher queues its objects again once it is readable.
    if (this.deps.watcher.unreadable(namespace)) return { outcome: "requeued", requeueAfterMs: maxUnreadableRetryMs };
    const cached = this.deps.watcher.workload(kind, namespace, name);
    // Not this replica's (any more): forgotten here, whatever its cache says; never deleted.
    if (this.deps.shard && !(await this.deps.shard.admit(objectKey, cached))) return this.letGo(key, stack);
    failpoint("after-ownership-check", `${key}@${cached?.metadata.generation ?? 0}`);
    if (!cached) {
      // A deletion whose last step (letting the namespace's RBAC binding go) failed is retried here.
      // Only then: every event of a gone object's children (its pods going) lands here too.
      if (this.deps.bindingGuard.releaseOwed(namespace)) await this.deps.bindingGuard.releaseIfUnused(namespace);
      // Gone without our finalizer running (removed by hand): the children go with their
      // ownerReferences; the stack state must not linger in the backend. Forgetting is for good,
      // so the cache's word is checked with the API server first.
      if (!(await this.deps.driver.exists(stack))) return;
      if (await readWorkload(this.deps.clients, objectKey)) return { outcome: "requeued", requeueAfterMs: busyRetryMs };
      this.deps.log.warn("object deleted without its finalizer; removing its stack state", { object: key, stack });
      await this.deps.driver.forget(stack);
      // Its plans too: a plan waiting for approval outlives nothing else of the object.
      await this.deps.plans.discard(stack);
      // It had the operator's finalizer (its stack exists), removed by hand: it may have been the last to hold the binding.
      await this.deps.bindingGuard.releaseIfUnused(namespace);
      return { outcome: "forgotten" };
    }
    const claim = `${namespace}/${name}`;
    if ((this.claimed.get(claim) ?? key) !== key) return { outcome: "requeued", requeueAfterMs: sameNameRetryMs };
    this.claimed.set(claim, key);
    try {
      const object = this.reporter.current(cached);
      return await this.reconcileObject(object, stack, key, this.deps.log.with({ object: key, stack }));
    } finally {
      this.claimed.delete(claim);
    }
  }

  /**
   * The object is not this replica's (any more). Another replica writes its status and runs its
   * stack from now on, and the object may come back: nothing remembered of it here may outlive
   * its stay (the status last written, the stack's pending operations and selection, its Events).
   */
  private letGo(key: string, stack: string): HandlerResult {
    this.reporter.forgetObject(key);
    this.deps.driver.letGo(stack);
    this.deps.events.forget(key);
    return { outcome: "moved" };
  }

  private async reconcileObject(object: Workload, stack: string, key: string, log: Logger): Promise<HandlerResult> {
    // A suspended object too: its deletion leaves what it made in place (orphaning.ts).
    if (object.metadata.deletionTimestamp) return this.deletion.finalize(object, stack, key, log);
    const refused = await this.notToApply(object, stack);
    if (refused) return refused.result;

    const observed = await this.children.observe(object);
    if (observed.conflicts.length) return this.reporter.conflict(object, stack, key, observed, log);
    const { applied, current } = appliedState(object, stack);
    if (isSuspended(object)) return this.suspended(object, stack, applied, current, observed);
    const orphanedState = !applied && (await this.deps.driver.hasResources(stack));
    const decision = decide({ program: programVersionOf(object.kind), generation: object.metadata.generation ?? 0, applied, drift: observed.drift, orphanedState });
    const request = pendingRequest(object);
    const held = await this.heldByDependencies(object, stack, decision, observed, current, request);
    if (held) return held.result;
    if (request === undefined && decision.action === "none" && (await this.deps.driver.hasPendingOperations(stack))) return this.finishInterrupted(object, stack, key, observed, log, current);
    // Under Preview an `up` needs an approval; what a request asks for without one is a refresh.
    if (object.spec.updatePolicy === "Preview" && request !== undefined) return this.refreshThenGate(object, stack, key, decision, observed, log, current, { why: "requested", reason: requestReason(request), requested: request });
    if (object.spec.updatePolicy === "Preview") return this.gated(object, stack, key, decision, observed, log, current);
    const next = withRequest(decision, request);
    if (next.action === "none") return this.reporter.report(object, observed.deployment, childrenPhase(object, observed), current);
    return this.update.apply(object, stack, key, next, observed, log);
  }

  /**
   * Why nothing may be applied for `object` now, with the result, or undefined. An object of an
   * excluded namespace, or whose kind cannot make its children from its spec (kind-refusal.ts), is
   * Stalled with the reason and a Warning Event, and gets no finalizer; one whose finalizer could
   * not be added (it changed since the cache read it) is tried again soon.
   */
  private async notToApply(object: Workload, stack: string): Promise<{ result: HandlerResult } | undefined> {
    const refused = excludedPhase(object, this.deps.excludedNamespaces) ?? kindRefusal(object);
    if (refused) {
      this.deps.events.record(object, "Warning", refused.reason, refused.message);
      return { result: await this.reporter.report(object, undefined, refused, stackStatusOf(object, stack)) };
    }
    if (!(await this.withFinalizer(object))) return { result: { outcome: "requeued", requeueAfterMs: conflictRetryMs } };
    return undefined;
  }

  /** Adds the finalizer unless the object has it; false when the object changed since the cache read it. */
  private async withFinalizer(object: Workload): Promise<boolean> {
    if (hasFinalizer(object)) return true;
    const added = await this.deps.bindingGuard.guarded(object.metadata.namespace, () => addFinalizer(this.deps.clients, object)).catch((error: unknown) => {
      // Changed since the cache read it (another controller's finalizer, say): not a failure;
      // its watch event, or this retry, brings the object back read afresh.
      if (isConflict(error)) return undefined;
      throw error;
    });
    if (!added) return false;
    object.metadata = added.metadata;
    return true;
  }

  /**
   * spec.suspend: nothing runs; the status says what the children are and what resuming would
   * change. No retry is due. A plan that waited for approval is withdrawn: nothing can apply it
   * now, and it was made for the generation before suspend, so resuming previews afresh.
   */
  private async suspended(object: Workload, stack: string, applied: Applied | undefined, current: StackStatus, observed: Observed): Promise<HandlerResult> {
    if (object.status?.preview) await this.deps.plans.discard(stack);
    const phase = suspendedPhase({ program: programVersionOf(object.kind), generation: object.metadata.generation ?? 0, applied, drift: observed.drift, rollout: childrenPhase(object, observed) });
    return this.reporter.report(object, observed.deployment, phase, { ...current, nextRetryTime: undefined });
  }

  /**
   * The objects the dependsOn chains from `object` reach, read from the watch cache. Sharded, one
   * that another replica owns is not in it, and is read from the API server (`otherShard`).
   */
  private async dependencyGraph(object: Workload): Promise<{ lookup: Lookup; otherShard: boolean }> {
    const { namespace } = object.metadata;
    const found = new Map<string, Workload | undefined>();
    let otherShard = false;
    const pending = [...dependenciesOf(object)];
    for (let ref = pending.shift(); ref && found.size < maxDependencyGraph; ref = pending.shift()) {
      const key = dependencyKey(namespace, ref);
      if (found.has(key)) continue;
      let dependency = this.deps.watcher.workload(ref.kind, namespace, ref.name);
      if (!dependency && this.deps.shard) {
        otherShard = true;
        dependency = await readWorkload(this.deps.clients, { kind: ref.kind, namespace, name: ref.name });
      }
      found.set(key, dependency);
      if (dependency) pending.push(...dependenciesOf(dependency));
    }
    return { lookup: (kind, name) => found.get(dependencyKey(namespace, { kind, name })), otherShard };
  }

  /**
   * spec.dependsOn: a new spec waits while a dependency is not Ready; nothing runs, and the status
   * says for what (a cycle: Stalled, with its Warning Event). Undefined when nothing holds it. No
   * retry is due: a dependency's change queues this object (watch.ts). A plan that waited for
   * approval is withdrawn, as under suspend: it may not be applied before the dependencies are
   * Ready, and they may change meanwhile. A pending reconcile request (`request`) is recorded as handled.
   */
  private async heldByDependencies(object: Workload, stack: string, decision: Decision, observed: Observed, current: StackStatus, request: string | undefined): Promise<{ result: HandlerResult } | undefined> {
    if (!holdsApply(decision) || !dependenciesOf(object).length) return undefined;
    const { lookup, otherShard } = await this.dependencyGraph(object);
    const phase = dependencyPhase(object, lookup, decision.reason);
    if (!phase) return undefined;
    if (object.status?.preview) await this.deps.plans.discard(stack);
    if (phase.kind === "progressing") this.deps.events.record(object, "Normal", phase.reason, phase.message);
    // A reconcile request is answered now, with the wait: `appstack reconcile` returns naming the
    // dependencies rather than wait out its deadline. The held spec is applied once they are Ready.
    if (request !== undefined) this.reporter.handled(object, request);
    const result = await this.reporter.report(object, observed.deployment, phase, { ...current, nextRetryTime: undefined });
    return { result: otherShard ? { outcome: "requeued", requeueAfterMs: otherShardDependencyRecheckMs } : result };
  }

  /**
   * The children are as they should be, but an engine killed mid-operation (its writes done, say)
   * left pending operations in the stack: its record of the cluster is unfinished. `up --refresh`
   * records the cluster again, a create that went through included (server-side apply adopts it);
   * under updatePolicy Preview only a refresh runs, which changes nothing and needs no approval.
   */
  private async finishInterrupted(object: Workload, stack: string, key: string, observed: Observed, log: Logger, current: StackStatus): Promise<HandlerResult> {
    const reason = "an interrupted operation left the stack's record of the cluster unfinished";
    if (object.spec.updatePolicy !== "Preview") return this.update.apply(object, stack, key, { action: "apply", reason, refresh: true, cause: "interrupted" }, observed, log);
    return this.refreshThenGate(object, stack, key, { action: "none" }, observed, log, current, { why: "interrupted", reason });
  }

  /**
   * Under updatePolicy Preview: `pulumi refresh` (it changes nothing but the stack's record, and
   * needs no approval), then the approval gate on `decision`. `requested`: the reconcile request
   * it handles, recorded as handled once the refresh has ended.
   */
  private async refreshThenGate(object: Workload, stack: string, key: string, decision: Decision, observed: Observed, log: Logger, current: StackStatus, cause: { why: "interrupted" | "requested"; reason: string; requested?: string }): Promise<HandlerResult> {
    const { why, reason, requested } = cause;
    log.info("pulumi refresh", { reason });
    const started = Date.now();
    try {
      await this.deps.driver.refresh(stack, programFor(object), updateMessage({ generation: object.metadata.generation ?? 0, why, detail: reason }), actingUser(object, this.deps.tenancy));
    } catch (error) {
      if (error instanceof StackBusy) return this.reporter.locked(object, observed.deployment, current, error, log);
      if (requested !== undefined && !(error instanceof OperationInterrupted)) this.reporter.handled(object, requested);
      throw await this.reporter.operationFailed(object, key, current, observed.deployment, error, started, log, object.status?.preview);
    }
    if (requested !== undefined) this.reporter.handled(object, requested);
    log.info("pulumi refresh succeeded", { operation: "refresh", durationMs: Date.now() - started });
    this.deps.events.record(object, "Normal", "StackRefreshed", `${reason}; recorded again by pulumi refresh`);
    return this.gated(object, stack, key, decision, observed, log, current);
  }

  /** updatePolicy Preview: nothing runs `up` unless a person approved the plan a preview saved. */
  private async gated(object: Workload, stack: string, key: string, decision: Decision, observed: Observed, log: Logger, current: StackStatus): Promise<HandlerResult> {
    const approval = await this.previewing.unusedApproval(object);
    const basis = previewBasis(programVersionOf(object.kind), object.metadata.generation ?? 0, observed.drift);
    const approvedPlan = await this.deps.plans.find(stack, approval);
    const next = gate({ decision, basis, preview: object.status?.preview, approval, findPlan: (id) => (id === approval ? approvedPlan : undefined) });
    if (approval !== undefined && next.action !== "apply") await this.previewing.refuse(object, approval, next.refused, log);
    if (next.action === "apply" && decision.action !== "none") return this.update.apply(object, stack, key, decision, observed, log, next);
    if (next.action === "preview" && decision.action !== "none") return this.previewing.preview(object, stack, key, decision, observed, log);
    const preview = next.action === "wait" ? object.status?.preview : undefined;
    if (!preview) await this.deps.plans.discard(stack);
    return this.reporter.report(object, observed.deployment, preview ? awaiting(object, preview) : childrenPhase(object, observed), current, preview);
  }
}
