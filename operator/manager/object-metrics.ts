// Metrics per object (APPSTACK_OBJECT_METRICS, off by default): each App's and Memcached's reconcile
// and engine operation durations, the resources its operations created, changed and deleted, and
// its last success, labelled {kind, namespace, name} as Flux's gotk_reconcile_duration_seconds is.
// Every object adds series of its own, so they are opt-in; an object's series go when it goes from
// this replica's caches (deleted, or moved to another replica), so they never outlive it.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { StackOperation, StepCounts, WorkloadKind } from "../../crds/types.ts";
import { parseKey } from "../kube/clients.ts";
import { stackName } from "../pulumi/stack-names.ts";

/** Fewer buckets than the by-kind histograms: each is a series per object. A reconcile that runs no engine takes well under 0.1 s; one that does, seconds. */
const objectBuckets = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

const operationKinds: readonly StackOperation["kind"][] = ["up", "refresh", "preview", "destroy"];

/** The engine's step counts (an operation's summary, as status.stack.lastOperation.resourceChanges has them) in three words. */
const changeOfStep: Readonly<Record<string, "created" | "changed" | "deleted">> = {
  create: "created",
  "create-replacement": "created",
  import: "created",
  update: "changed",
  replace: "changed",
  delete: "deleted",
  "delete-replaced": "deleted",
  discard: "deleted",
};
const changes = ["created", "changed", "deleted"] as const;

type ObjectLabels = { kind: WorkloadKind; namespace: string; name: string };

export class ObjectMetrics {
  readonly reconcileSeconds: Histogram;
  readonly operationSeconds: Histogram;
  readonly resources: Counter;
  readonly lastSuccess: Gauge;
  /** Stack name -> its object, for the engine's operations, which know only their stack. */
  private readonly objects = new Map<string, ObjectLabels>();

  constructor(registry: Registry) {
    const registers = [registry];
    const labelNames = ["kind", "namespace", "name"];
    this.reconcileSeconds = new Histogram({ name: "appstack_object_reconcile_duration_seconds", help: "Reconcile durations of each object (APPSTACK_OBJECT_METRICS).", labelNames, buckets: objectBuckets, registers });
    this.operationSeconds = new Histogram({ name: "appstack_object_operation_duration_seconds", help: "Pulumi operation durations of each object's stack, by operation: up, refresh, preview, destroy (APPSTACK_OBJECT_METRICS).", labelNames: [...labelNames, "operation"], buckets: objectBuckets, registers });
    this.resources = new Counter({ name: "appstack_object_resources_total", help: "Resources each object's up, refresh and destroy created, changed (updated or replaced) and deleted, as the engine's summary counts them (status.stack.lastOperation.resourceChanges); a preview changes nothing and is not counted (APPSTACK_OBJECT_METRICS).", labelNames: [...labelNames, "operation", "change"], registers });
    this.lastSuccess = new Gauge({ name: "appstack_object_last_success_timestamp_seconds", help: "When a reconcile of each object last succeeded (Unix time; APPSTACK_OBJECT_METRICS).", labelNames, registers });
  }

  /** The object of a work key (Kind/namespace/name), known from now on by its stack too. */
  private labelsOf(key: string): ObjectLabels | undefined {
    const parsed = safeParse(key);
    if (!parsed) return undefined;
    this.objects.set(stackName(parsed.kind, parsed.namespace, parsed.name), parsed);
    return parsed;
  }

  /** A reconcile of `key` ended after `seconds`; `done`: it succeeded (nothing left to retry). */
  reconciled(key: string, seconds: number, done: boolean): void {
    const labels = this.labelsOf(key);
    if (!labels) return;
    this.reconcileSeconds.observe(labels, seconds);
    if (done) this.lastSuccess.set(labels, Date.now() / 1000);
  }

  /** A reconcile of `key` begins: the operations it runs on its stack are the object's. */
  reconciling(key: string): void {
    this.labelsOf(key);
  }

  /** An engine operation on `stack` ended; an operation on a stack no reconcile named (none here) is not counted. */
  operated(stack: string, operation: StackOperation["kind"], seconds: number, resourceChanges: StepCounts | undefined): void {
    const labels = this.objects.get(stack);
    if (!labels) return;
    this.operationSeconds.observe({ ...labels, operation }, seconds);
    if (operation === "preview") return;
    for (const [step, count] of Object.entries(resourceChanges ?? {})) {
      const change = changeOfStep[step];
      if (change && count > 0) this.resources.inc({ ...labels, operation, change }, count);
    }
  }

  /** The object of `key` is gone from this replica: its series go with it. */
  forget(key: string): void {
    const labels = safeParse(key);
    if (!labels) return;
    this.objects.delete(stackName(labels.kind, labels.namespace, labels.name));
    this.reconcileSeconds.remove(labels);
    this.lastSuccess.remove(labels);
    for (const operation of operationKinds) {
      this.operationSeconds.remove({ ...labels, operation });
      for (const change of changes) this.resources.remove({ ...labels, operation, change });
    }
  }
}

function safeParse(key: string): ObjectLabels | undefined {
  try {
    return parseKey(key);
  } catch {
    return undefined;
  }
}
