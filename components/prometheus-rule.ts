// The alerts the install ships with appstack:prometheusRule: one PrometheusRule
// (monitoring.coreos.com/v1) whose rules read only metrics the operator serves. Each rule names its
// entry in the on-call runbook (docs/runbook.md), whose table of alerts is generated from this list
// (operator/cmd/alerts-reference.ts). test/unit/prometheus-rule.test.ts checks the rules with
// Prometheus's own rule and PromQL parsers (toolchain/rule-check) and every metric they name against
// the operator's registrations.
//
// The series are read as the install's ServiceMonitor labels them: the scrape target's namespace in
// `namespace`, which selects this install's replicas, so that two installs in one Prometheus alert
// apart. A metric's own `namespace` label (the watched namespace of
// appstack_watched_namespace_unavailable) clashes with it, and Prometheus keeps it as
// `exported_namespace`.
import * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";

export interface AlertRule {
  readonly alert: string;
  /** PromQL; `NS` stands for the install's namespace, as a label matcher's value. */
  readonly expr: string;
  /** How long the expression must hold before the alert fires, as Prometheus writes durations. */
  readonly for: string;
  readonly severity: "critical" | "warning";
  /** The alert's one line, with Prometheus's template fields. */
  readonly summary: string;
  /** What it means, for the runbook's table: Markdown. */
  readonly meaning: string;
}

/** The runbook page, relative to the repository, whose headings are the alerts' names. */
export const runbookPage = "docs/runbook.md";

export const alertRules: readonly AlertRule[] = [
  {
    alert: "AppstackNoLeader",
    expr: 'max by (namespace) (appstack_leader{namespace="NS"}) < 1 or absent(appstack_leader{namespace="NS"})',
    for: "5m",
    severity: "critical",
    summary: "No replica of appstack in {{ $labels.namespace }} holds the leader Lease, or none is scraped: no object of any kind is reconciled",
    meaning: "no replica holds the leader Lease, or no replica's metrics are scraped; nothing is reconciled, the workloads keep running",
  },
  {
    alert: "AppstackShardWithoutOwner",
    expr: 'sum by (namespace) (appstack_shard_assigned_objects{namespace="NS"}) > sum by (namespace) (appstack_shard_objects{namespace="NS"}) or max by (namespace) (appstack_shard_members{namespace="NS"}) == 0',
    for: "10m",
    severity: "critical",
    summary: "Sharded appstack in {{ $labels.namespace }} has objects that no live replica reconciles",
    meaning: "sharded: the sharder placed more objects than the replicas' caches hold (an owner label not written, or written for a replica that is gone), or it sees no live replica",
  },
  {
    alert: "AppstackReconcileErrors",
    expr: 'sum by (namespace, kind, reason) (increase(appstack_reconcile_errors_total{namespace="NS"}[10m])) > 0',
    for: "15m",
    severity: "warning",
    summary: "appstack's reconciles of {{ $labels.kind }} objects keep failing with {{ $labels.reason }}",
    meaning: "reconciles of a kind have failed with the same reason in every ten-minute window for a while: an object retried on its backoff that does not recover",
  },
  {
    alert: "AppstackQueueGrowing",
    expr: 'min_over_time(appstack_queue_depth{namespace="NS"}[30m]) > 0 and deriv(appstack_queue_depth{namespace="NS"}[30m]) > 0',
    for: "15m",
    severity: "warning",
    summary: "appstack's work queue on {{ $labels.instance }} has not emptied for half an hour and still grows",
    meaning: "a replica's queue has not been empty once in half an hour and grows: objects change faster than its engines apply them",
  },
  {
    alert: "AppstackObjectStalled",
    expr: 'sum by (namespace, kind, reason) (appstack_stalled_objects{namespace="NS"}) > 0',
    for: "15m",
    severity: "warning",
    summary: "{{ $value }} {{ $labels.kind }} objects have been Stalled ({{ $labels.reason }}) for a quarter of an hour",
    meaning: "objects of a kind have been Stalled with the same reason for a while: each waits for a person",
  },
  {
    alert: "AppstackStackLockHeld",
    expr: 'sum by (namespace, kind) (increase(appstack_reconcile_total{namespace="NS", result="locked"}[5m])) > 0',
    for: "10m",
    severity: "warning",
    summary: "A {{ $labels.kind }} object's stack has been locked by another engine for longer than an operation's deadline",
    meaning: "reconciles have found a stack locked by another engine for longer than the default operation deadline: a holder that is not proven gone",
  },
  {
    alert: "AppstackWatchedNamespaceUnavailable",
    expr: 'appstack_watched_namespace_unavailable{namespace="NS"} == 1',
    for: "10m",
    severity: "warning",
    summary: "appstack cannot read watched namespace {{ $labels.exported_namespace }} (deleted, or its RoleBinding gone): its objects are not reconciled",
    meaning: "a namespace of `watchNamespaces` answers 403: deleted, or the operator's RoleBinding there is gone; its objects wait",
  },
];

/** The alert's entry in the runbook: its heading's anchor. */
export const runbookAnchor = (alert: string): string => alert.toLowerCase();

/** The rule groups, as a Prometheus rule file has them (a PrometheusRule's spec is one), for the install in `namespace`. */
export function ruleGroups(namespace: string): { groups: { name: string; rules: Record<string, unknown>[] }[] } {
  const rules = alertRules.map((rule) => ({
    alert: rule.alert,
    expr: rule.expr.replaceAll('"NS"', JSON.stringify(namespace)),
    for: rule.for,
    labels: { severity: rule.severity },
    annotations: { summary: rule.summary, description: rule.meaning, runbook_url: `${runbookPage}#${runbookAnchor(rule.alert)}` },
  }));
  return { groups: [{ name: "appstack", rules }] };
}

/** The PrometheusRule, beside the install's other objects; its CRD comes with the Prometheus operator. */
export function prometheusRule(name: string, meta: { name: string; namespace: pulumi.Input<string>; labels: Record<string, string> }, namespace: string, parent: pulumi.Resource): void {
  new k8s.apiextensions.CustomResource(`${name}-alerts`, {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "PrometheusRule",
    metadata: { ...meta, name: `${meta.name}-alerts` },
    spec: ruleGroups(namespace),
  }, { parent });
}
