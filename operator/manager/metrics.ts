// Prometheus metrics of the operator: reconciles, the queue, Pulumi operations, leadership.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { errorReason } from "../controller/errors.ts";
import type { HandlerResult } from "../controller/queue.ts";
import type { OperationObserver } from "../pulumi/deadline-runner.ts";
import { buildVersion } from "./build-info.ts";
import { ObjectMetrics } from "./object-metrics.ts";
import { countStalled, type StalledObject } from "./stalled-objects.ts";

const durationBuckets = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export class OperatorMetrics {
  readonly registry = new Registry();
  readonly reconciles = new Counter({ name: "appstack_reconcile_total", help: "Reconciles by kind and result: success, error, requeued (to be run again shortly), locked (another engine holds its stack), forgotten (its stack removed, not destroyed), interrupted (stopped for the handover), moved (now another replica's), recheck (reported, and checked again at a set time: a pod's start timeout).", labelNames: ["kind", "result"], registers: [this.registry] });
  readonly reconcileErrors = new Counter({ name: "appstack_reconcile_errors_total", help: "Failed reconciles by kind and reason (StackUpdateFailed, ResourceConflict, DriftDetected, Forbidden, InternalError, ...).", labelNames: ["kind", "reason"], registers: [this.registry] });
  readonly resyncs = new Counter({ name: "appstack_resync_total", help: "Periodic resyncs: every object re-checked against its live children.", registers: [this.registry] });
  readonly reconcileSeconds = new Histogram({ name: "appstack_reconcile_duration_seconds", help: "Reconcile durations by kind.", labelNames: ["kind"], buckets: durationBuckets, registers: [this.registry] });
  readonly operations = new Counter({ name: "appstack_pulumi_operations_total", help: "Pulumi engine operations by operation (up, refresh, preview, destroy) and result (succeeded, failed).", labelNames: ["operation", "result"], registers: [this.registry] });
  readonly operationSeconds = new Histogram({ name: "appstack_pulumi_operation_duration_seconds", help: "Pulumi engine operation durations by operation (up, refresh, preview, destroy).", labelNames: ["operation"], buckets: durationBuckets, registers: [this.registry] });
  readonly runningOperations = new Gauge({ name: "appstack_pulumi_operations_running", help: "Pulumi operations (engine processes) running now.", registers: [this.registry] });
  readonly lastSuccessfulSync = new Gauge({ name: "appstack_last_successful_sync_timestamp_seconds", help: "When a reconcile last succeeded (Unix time): it ended with nothing to retry (result success).", registers: [this.registry] });
  readonly leader = new Gauge({ name: "appstack_leader", help: "1 while this process holds the leader lease.", registers: [this.registry] });
  readonly leaseCalls = new Counter({ name: "appstack_leader_lease_calls_total", help: "Calls to acquire or renew the leader lease, by result (success, error): a standby that cannot reach the API counts errors.", labelNames: ["result"], registers: [this.registry] });
  /** Per object, with APPSTACK_OBJECT_METRICS (object-metrics.ts); undefined, and none of its series exist, without. */
  readonly objects?: ObjectMetrics;

  /**
   * `namespaces`: each watched namespace (none when all are watched) and whether it is unreadable now.
   * `objectMetrics`: the series per object too (APPSTACK_OBJECT_METRICS). `stalled`: the objects of
   * this replica's caches that are Stalled now (stalled-objects.ts).
   */
  constructor(queue: () => { depth: number; active: number }, namespaces: () => ReadonlyMap<string, boolean> = () => new Map(), { objectMetrics = false, stalled = () => [] }: { objectMetrics?: boolean; stalled?: () => readonly StalledObject[] } = {}) {
    if (objectMetrics) this.objects = new ObjectMetrics(this.registry);
    const depth = () => queue();
    new Gauge({ name: "appstack_queue_depth", help: "Objects waiting to be reconciled.", registers: [this.registry], collect() { this.set(depth().depth); } });
    new Gauge({ name: "appstack_queue_active", help: "Objects being reconciled now.", registers: [this.registry], collect() { this.set(depth().active); } });
    new Gauge({
      name: "appstack_watched_namespace_unavailable",
      help: "1 while a watched namespace answers 403 (deleted, or the operator's RoleBinding there gone): its objects are not reconciled. Only with a list of namespaces, on the leader.",
      labelNames: ["namespace"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [namespace, unavailable] of namespaces()) this.set({ namespace }, unavailable ? 1 : 0);
      },
    });
    new Gauge({
      name: "appstack_stalled_objects",
      help: "Objects whose Stalled condition is True now, by kind and reason, as this replica's watch caches hold them (the leader's; sharded, each replica's own share): each waits for a person (docs/runbook.md).",
      labelNames: ["kind", "reason"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const { labels, count } of countStalled(stalled())) this.set({ ...labels }, count);
      },
    });
    new Gauge({ name: "appstack_build_info", help: "Always 1; its labels say which build runs: the operator's version (the image's APPSTACK_VERSION build argument, which `npx appstack image` sets to the image's tag; else package.json's) and Node.js's.", labelNames: ["version", "node_version"], registers: [this.registry] })
      .set({ version: buildVersion(), node_version: process.version }, 1);
    collectDefaultMetrics({ register: this.registry, prefix: "appstack_process_" });
  }

  /**
   * Wraps a reconcile: counts it by what it came to, and times it. Only a reconcile that is done is
   * a successful sync. `present`: whether the object is still this replica's afterwards (in its
   * caches); per object, the series of one that is not go.
   */
  async reconcile(key: string, run: () => Promise<HandlerResult>, present: () => boolean = () => true): Promise<HandlerResult> {
    const kind = key.split("/")[0] ?? "unknown";
    const end = this.reconcileSeconds.startTimer({ kind });
    this.objects?.reconciling(key);
    let done = false;
    try {
      const result = await run();
      this.reconciles.inc({ kind, result: result?.outcome ?? "success" });
      done = !result;
      if (done) this.lastSuccessfulSync.set(Date.now() / 1000);
      return result;
    } catch (error) {
      this.reconciles.inc({ kind, result: "error" });
      this.reconcileErrors.inc({ kind, reason: errorReason(error) });
      throw error;
    } finally {
      const seconds = end();
      if (this.objects) {
        if (present()) this.objects.reconciled(key, seconds, done);
        else this.objects.forget(key);
      }
    }
  }

  /** The stack driver's observer: engine operations by kind and result, and how many run; per object, what each changed. */
  readonly operationObserver: OperationObserver = {
    started: () => this.runningOperations.inc(),
    finished: (operation, result, seconds, { stack, resourceChanges }) => {
      this.runningOperations.dec();
      this.operations.inc({ operation, result });
      this.operationSeconds.observe({ operation }, seconds);
      this.objects?.operated(stack, operation, seconds, resourceChanges);
    },
  };
}
