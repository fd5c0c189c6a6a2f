// What a reconcile says on the object: its status (phase, live children, stack report) written
// through the status subresource, and the failures as conditions and Warning Events, each with
// when the next attempt comes. It keeps the last status it wrote per object, which is fresher than
// the watch cache right after a write, until the cache shows that status or another writer's.
import { isDeepStrictEqual } from "node:util";
import type { V1Deployment, V1Pod, V1Service } from "@kubernetes/client-node";
import { childManifests, podSelector } from "../../components/kinds.ts";
import { selectorString } from "../../components/metadata.ts";
import type { PreviewStatus, StackStatus, Workload, WorkloadStatus } from "../../crds/types.ts";
import { isControlledBy, type Children, type Observed } from "./children.ts";
import { isReadyPhase, type Phase } from "./conditions.ts";
import { describeDrift } from "./drift.ts";
import { errorReason, isStateUnwritable, ReportedFailure } from "./errors.ts";
import type { EventRecorder } from "./events.ts";
import { briefError, isNotFound, keyOf, keyString, parseKey, readWorkload, type KubeClients } from "../kube/clients.ts";
import type { Logger } from "../base/log.ts";
import { redactKnownSecrets } from "../base/redact.ts";
import type { Backoff, HandlerResult } from "./queue.ts";
import { stackName } from "../pulumi/stack-names.ts";
import { OperationInterrupted, OperationTimedOut, StackOperationFailed, type StackBusy } from "../pulumi/stack-errors.ts";
import { childrenPhase } from "./child-readiness.ts";
import { computeStatus, stackStatusOf, withPodTrouble, writeStatus } from "./status.ts";
import { withServiceEndpoints } from "./service-endpoints.ts";
import { explainedFailure, isForbidden, type Tenancy } from "./tenancy.ts";
import type { Watcher } from "./watch.ts";

export const busyRetryMs = 5_000;

/** When an object whose status another writer changed under a write is reconciled again (its watch event usually comes first). */
const statusConflictRetryMs = 1_000;

/** The stack report of a failed attempt: how many in a row, and when the next one comes. */
export function retrying(stack: StackStatus, attempt: number, delayMs: number): StackStatus {
  return { ...stack, attempts: attempt, nextRetryTime: new Date(Date.now() + delayMs).toISOString() };
}

/** The stack report with the failed operation an error carries, if it carries one. */
export function withOperationOf(stack: StackStatus, error: unknown): StackStatus {
  return error instanceof StackOperationFailed ? { ...stack, lastOperation: error.operation } : stack;
}

function conflictMessage(object: Workload, observed: Observed): string {
  const taken = observed.conflicts.map((c) => `${c.child.kind} ${object.metadata.namespace}/${c.child.name} (${c.state === "foreign" && c.controller ? `controlled by ${c.controller}` : "not created by appstack"})`);
  return `${taken.join(" and ")} already exists and was not created for this ${object.kind}; appstack neither changes nor deletes it. Delete or rename it, or give this ${object.kind} another name`;
}

export interface ReporterDeps {
  readonly clients: KubeClients;
  readonly watcher: Watcher;
  readonly children: Children;
  readonly events: EventRecorder;
  readonly log: Logger;
  readonly backoff: (key: string) => Backoff;
  /** How long a pod may fail to start (image pull, crash loop, config error) before the object is Stalled. */
  readonly podStartTimeoutMs: number;
  /** How long Ready waits for service proxies to apply a change of the Services' EndpointSlices (service-endpoints.ts). */
  readonly proxySyncMs: number;
  /** Tenant identities (tenancy.ts): a failure to act as the object's ServiceAccount is explained. */
  readonly tenancy?: Tenancy | undefined;
}

/**
 * A status this replica wrote that its watch cache may not show yet, and the statuses the object
 * had before it as far as this replica knows (the one its first write replaced, and its own writes
 * since): a cache that shows one of those is behind; one that shows any other has another writer's.
 */
interface Written {
  /** The object's work key: an object that leaves this replica's share is forgotten by it. */
  readonly key: string;
  readonly status: WorkloadStatus;
  /** The object's resourceVersion after the write: the precondition of the next (status.ts) while the cache is behind. */
  readonly resourceVersion: string | undefined;
  readonly before: readonly (WorkloadStatus | undefined)[];
}

/** Statuses kept as older than the last write: a cache further behind is taken for another writer's (at worst a needless write, or `up`). */
const maxBefore = 8;

export class Reporter {
  /** Per object (uid): the last status written while the watch cache may not show it yet. */
  private readonly written = new Map<string, Written>();

  /** Per object (uid): a reconcile request whose operation has ended, until a status write records it. */
  private readonly handledRequests = new Map<string, { readonly key: string; readonly requestedAt: string }>();

  private readonly deps: ReporterDeps;

  constructor(deps: ReporterDeps) {
    this.deps = deps;
  }

  /**
   * The object a reconcile of `cached` (the watch cache's copy) starts from. Right after a write
   * the cache is behind, and the status last written (with the resourceVersion it made) is
   * fresher. A cache that shows a status this replica neither wrote nor replaced has another
   * writer's (another replica's, while the object was away; a person's): that is the object's
   * status, and a different one is written again.
   */
  current(cached: Workload): Workload {
    const uid = cached.metadata.uid;
    const written = this.written.get(uid);
    if (!written) return { ...cached };
    if (written.before.some((status) => isDeepStrictEqual(status, cached.status))) return { ...cached, metadata: { ...cached.metadata, resourceVersion: written.resourceVersion }, status: written.status };
    // The cache shows the last write, or another writer's since: it is right from now on.
    this.written.delete(uid);
    return { ...cached };
  }

  /** Forgets what was written for an object whose finalizer is gone. */
  forgetWritten(uid: string): void {
    this.written.delete(uid);
    this.handledRequests.delete(uid);
  }

  /** Forgets what was written for the object of `key`, whatever its uid: it left this replica's share. */
  forgetObject(key: string): void {
    for (const [uid, written] of this.written) if (written.key === key) this.written.delete(uid);
    for (const [uid, handled] of this.handledRequests) if (handled.key === key) this.handledRequests.delete(uid);
  }

  /**
   * The operation a reconcile request asked for has ended (succeeded or failed): the next status
   * written says so (status.lastHandledReconcileAt), not before, so that a script waiting for it
   * reads the operation's outcome with it.
   */
  handled(object: Workload, requestedAt: string): void {
    this.handledRequests.set(object.metadata.uid, { key: keyString(keyOf(object)), requestedAt });
  }

  /** `object.status` was just written over `replaced`. */
  private remember(object: Workload, replaced: WorkloadStatus | undefined): void {
    const earlier = this.written.get(object.metadata.uid);
    const before = earlier ? [...earlier.before, earlier.status] : [];
    if (!before.some((status) => isDeepStrictEqual(status, replaced))) before.push(replaced);
    this.written.set(object.metadata.uid, { key: keyString(keyOf(object)), status: object.status!, resourceVersion: object.metadata.resourceVersion, before: before.slice(-maxBefore) });
  }

  /**
   * Writes `status` over `object`'s (`replaced`), with the resourceVersion precondition
   * (status.ts). The object changed since it was read: read afresh, a status still as `replaced`
   * (the change was its labels, annotations or spec: no other status writer) is written at the
   * fresh resourceVersion; another writer's status is left standing, and the object is
   * reconciled again soon, from it. Returns a requeue in that case.
   */
  private async write(object: Workload, status: WorkloadStatus, replaced: WorkloadStatus | undefined): Promise<HandlerResult> {
    try {
      if (await writeStatus(this.deps.clients, object, status)) this.remember(object, replaced);
      return undefined;
    } catch (error) {
      // 409 only: the precondition failed (a 422 is a status the CRD refuses, not a race).
      if ((error as { code?: unknown } | undefined)?.code !== 409) throw error;
    }
    const fresh = await readWorkload(this.deps.clients, keyOf(object));
    if (!fresh || fresh.metadata.uid !== object.metadata.uid) return undefined;
    if (!isDeepStrictEqual(fresh.status, replaced)) {
      this.deps.log.info("the status changed since the object was read (another writer's); not written over, reconciling again", { object: keyString(keyOf(object)) });
      this.written.delete(object.metadata.uid);
      return { outcome: "requeued", requeueAfterMs: statusConflictRetryMs };
    }
    object.metadata = { ...object.metadata, resourceVersion: fresh.metadata.resourceVersion };
    if (await writeStatus(this.deps.clients, object, status)) this.remember(object, replaced);
    return undefined;
  }

  /**
   * After an `up`: the children as the API server has them now. A change made while or right after
   * the engine wrote them is drift, never taken for what was applied: it is repaired next.
   */
  async settle(object: Workload, stack: string, key: string, stackStatus: StackStatus, log: Logger): Promise<HandlerResult> {
    const observed = await this.deps.children.observe(object, true);
    if (observed.conflicts.length) return this.conflict(object, stack, key, observed, log, stackStatus);
    if (!observed.drift.length) return this.report(object, observed.deployment, childrenPhase(object, observed), stackStatus);
    const message = `the children changed while or after they were applied: ${describeDrift(observed.drift)}`;
    const { delayMs } = this.deps.backoff(key);
    log.warn("drift right after the update; repairing", { drift: observed.drift, retryInMs: delayMs });
    await this.report(object, observed.deployment, { kind: "progressing", reason: "DriftDetected", message }, stackStatus);
    throw new ReportedFailure("DriftDetected", message);
  }

  /**
   * Stalled with the engine's message, a Warning Event, and when the next attempt comes; returns
   * the error to throw. An operation this replica stopped to hand over did not fail: the status
   * goes on saying it is being applied, for the next leader to carry on.
   */
  async operationFailed(object: Workload, key: string, previous: StackStatus, deployment: V1Deployment | undefined, error: unknown, started: number, log: Logger, preview?: PreviewStatus): Promise<Error> {
    if (error instanceof OperationInterrupted) {
      log.warn("operation stopped for the handover; the next leader carries on", { durationMs: Date.now() - started, error: error.message });
      return error;
    }
    const operation = error instanceof StackOperationFailed ? error.operation : undefined;
    const message = await explainedFailure(this.deps.clients, object, this.deps.tenancy, operation?.message ?? (error instanceof Error ? error.message : String(error)));
    const kind = operation?.kind ?? "up";
    // An RBAC refusal (the tenant's ServiceAccount may not do it: tenancy.ts) is named as such: only
    // a change of its Role helps, which no watch announces, so it is retried with backoff like any failure.
    const reason = error instanceof OperationTimedOut ? "OperationTimedOut" : isStateUnwritable(message) ? "StateUnwritable" : isForbidden(message) ? "Forbidden" : kind === "preview" ? "PreviewFailed" : "StackUpdateFailed";
    const { attempt, delayMs } = this.deps.backoff(key);
    log.error(`pulumi ${kind} failed`, { operation: kind, durationMs: Date.now() - started, attempt, retryInMs: delayMs, error: message });
    this.deps.events.record(object, "Warning", reason, message);
    const stack = retrying(withOperationOf(previous, error), attempt, delayMs);
    // Best effort: the retry matters more than the report of the failure.
    await this.report(object, deployment, { kind: "stalled", reason, message }, stack, preview).catch(() => undefined);
    return new ReportedFailure(reason, message);
  }

  /** A child of the same name is someone else's: nothing is written; retried with backoff until it is gone. */
  async conflict(object: Workload, stack: string, key: string, observed: Observed, log: Logger, stackStatus?: StackStatus): Promise<never> {
    const message = conflictMessage(object, observed);
    const { attempt, delayMs } = this.deps.backoff(key);
    log.warn("resource conflict", { conflicts: observed.conflicts.map((c) => `${c.child.kind}/${c.child.name}`), attempt, retryInMs: delayMs });
    this.deps.events.record(object, "Warning", "ResourceConflict", message);
    await this.report(object, undefined, { kind: "stalled", reason: "ResourceConflict", message }, retrying(stackStatus ?? stackStatusOf(object, stack), attempt, delayMs));
    throw new ReportedFailure("ResourceConflict", message);
  }

  /** A failure nobody reported yet (an API error, a bug): logged, and shown on the object where there is one. */
  async unexpected(key: string, error: unknown): Promise<void> {
    const reason = errorReason(error);
    const message = `${reason}: ${briefError(error)}`;
    const { attempt, delayMs } = this.deps.backoff(key);
    this.deps.log.error("reconcile failed", { object: key, reason, attempt, retryInMs: delayMs, error: briefError(error), ...(reason === "InternalError" && error instanceof Error ? { stack: error.stack } : {}) });
    const objectKey = parseKey(key);
    const cached = this.deps.watcher.workload(objectKey.kind, objectKey.namespace, objectKey.name);
    if (!cached) return;
    // From the status last written, as a reconcile starts: the cache may not show an `up`'s report yet.
    const object = this.current(cached);
    // A 403 (RBAC: a tenant's ServiceAccount may not write a child, tenancy.ts) is named as such.
    const shown = reason === "Forbidden" ? reason : "ReconcileFailed";
    this.deps.events.record(object, "Warning", shown, message);
    const stack = retrying(stackStatusOf(object, stackName(objectKey.kind, objectKey.namespace, objectKey.name)), attempt, delayMs);
    const deployment = (await this.deps.children.observe(object).catch(() => undefined))?.deployment;
    await this.report(object, deployment, { kind: "stalled", reason: shown, message }, stack).catch(() => undefined);
  }

  /**
   * Another engine holds the stack's lock: one of a previous leader that may still write it (frozen,
   * or cut off from the API server), or a person's `appstack pulumi`. Said on the object, since
   * only the holder's end (or a person) frees it; checked again shortly.
   */
  async locked(object: Workload, deployment: V1Deployment | undefined, stack: StackStatus, error: StackBusy, log: Logger): Promise<HandlerResult> {
    log.info("stack locked by another engine; retrying", { error: error.message, retryInMs: busyRetryMs });
    this.deps.events.record(object, "Warning", "StackLocked", error.message);
    await this.report(object, deployment, { kind: "progressing", reason: "StackLocked", message: error.message }, stack).catch(() => undefined);
    return { outcome: "locked", requeueAfterMs: busyRetryMs };
  }

  /** `phase`, held back from Ready until the object's Services route to its ready pods (service-endpoints.ts). */
  private served(object: Workload, phase: Phase, pods: readonly V1Pod[]): { phase: Phase; recheckInMs?: number } {
    if (!isReadyPhase(phase)) return { phase };
    const { namespace } = object.metadata;
    const { watcher, proxySyncMs } = this.deps;
    const services = childManifests(object)
      .filter((child) => child.kind === "Service")
      .map((child) => watcher.child("Service", namespace, child.name))
      .filter((live): live is V1Service => live !== undefined && isControlledBy(live, object));
    return withServiceEndpoints(phase, pods, { services, slicesOf: (service) => watcher.endpointSlicesOf(service), lastChange: (slices) => watcher.endpointsChangedAt(slices), proxySyncMs });
  }

  /**
   * Writes the status of `phase`, refined by what the pods say. Returns a requeue when the pods
   * that cannot start will have waited out the bound: the object then reads Stalled even if no
   * pod event comes.
   */
  async report(object: Workload, deployment: V1Deployment | undefined, phase: Phase, stack: StackStatus, preview?: PreviewStatus): Promise<HandlerResult> {
    const selector = podSelector(object);
    // Pods count only under the object's own Deployment: never another object's.
    const pods = deployment ? this.deps.watcher.podsOf(object.metadata.namespace, selector).filter((pod) => !pod.metadata?.deletionTimestamp) : [];
    const { phase: troubled, recheckInMs: troubleRecheckMs } = withPodTrouble(phase, pods, this.deps.podStartTimeoutMs);
    const { phase: refined, recheckInMs: routingRecheckMs } = this.served(object, troubled, pods);
    const recheckInMs = troubleRecheckMs ?? routingRecheckMs;
    // Operation failures record their own Events; a rollout that cannot go on is said here (a
    // Service that does not route yet is no trouble: it passes by itself).
    if (troubled.kind === "stalled" || (troubled.kind === "progressing" && troubled !== phase)) this.deps.events.record(object, "Warning", troubled.reason, troubled.message);
    // An error's text may quote the backend URL (Pulumi's do), password included.
    const uid = object.metadata.uid;
    const handledRequest = this.handledRequests.get(uid)?.requestedAt;
    const status = redactKnownSecrets(computeStatus({ object, deployment, pods, selector: selectorString(selector), phase: refined, stack, preview, handledRequest }));
    try {
      const superseded = await this.write(object, status, object.status);
      if (superseded) return superseded;
      if (handledRequest !== undefined) this.handledRequests.delete(uid);
    } catch (error) {
      // The object was deleted under us: nothing left to report on.
      if (!isNotFound(error)) throw error;
    }
    return recheckInMs === undefined ? undefined : { outcome: "recheck", requeueAfterMs: recheckInMs };
  }
}
