// The alerts the install ships (components/prometheus-rule.ts) as Prometheus reads them: its own
// rule-file and PromQL parsers (toolchain/rule-check, built on this file's first run) accept every
// rule, and every metric a rule reads is one the operator registers (the registries as
// operator/cmd/metrics-reference.ts builds them, from the code). Each alert has its severity, summary
// and an entry in the on-call runbook (docs/runbook.md), whose table of alerts is generated from the
// rules and which names every condition reason a person may meet. Each check is also shown to fail.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { alertRules, ruleGroups, runbookAnchor, runbookPage } from "../../components/prometheus-rule.ts";
import { alertsBlock, alertsReference, pageAlerts } from "../../operator/cmd/alerts-reference.ts";
import { registeredMetrics } from "../../operator/cmd/metrics-reference.ts";
import { conditionReasons } from "../../operator/controller/reasons.ts";
import { repoRoot } from "../../toolchain/tools.ts";
import { githubSlug } from "../helpers/markdown-links.ts";
import { checkRules, type RuleReading } from "../helpers/rule-check.ts";

const registered = registeredMetrics();
const runbook = readFileSync(join(repoRoot, runbookPage), "utf8");

/** The series a metric serves: itself, and a histogram's `_bucket`, `_sum` and `_count`. */
function seriesNames(): Set<string> {
  return new Set(registered.flatMap((row) => (row.type === "histogram" ? [`${row.name}_bucket`, `${row.name}_sum`, `${row.name}_count`] : [row.name])));
}

/** Each rule's metrics that the operator does not serve, and each rule that names none or reads a selector without a name. */
function unservedMetrics(readings: readonly RuleReading[], served: ReadonlySet<string>): string[] {
  return readings.flatMap((rule) => [
    ...rule.metrics.filter((metric) => !served.has(metric)).map((metric) => `${rule.name}: ${metric} is not a metric the operator serves`),
    ...(rule.unnamed > 0 ? [`${rule.name}: ${rule.unnamed} selector(s) without a metric name`] : []),
    ...(rule.metrics.length === 0 ? [`${rule.name}: reads no metric`] : []),
  ]);
}

/** The anchors of the runbook's headings, as GitHub makes them. */
const headings = new Set([...runbook.matchAll(/^#{1,6}\s+(.+)$/gm)].map((match) => githubSlug(match[1]!)));

test("Prometheus's own rule check accepts every rule the install ships", () => {
  const checked = checkRules(ruleGroups("appstack-system"));
  assert.deepEqual(checked.errors, []);
  assert.deepEqual(checked.rules.map((rule) => rule.name), alertRules.map((rule) => rule.alert));
});

test("...and refuses a rule it should: a broken expression, a bad duration, an unknown field, a template that does not parse, two alerts of one name", () => {
  const [first] = ruleGroups("appstack-system").groups;
  const rule = first!.rules[0]!;
  const broken = (change: Record<string, unknown>, extra: Record<string, unknown>[] = []) => ({ groups: [{ name: "appstack", rules: [{ ...rule, ...change }, ...extra] }] });
  const errors = (file: object) => checkRules(file).errors.join("\n");
  assert.match(errors(broken({ expr: "max by (namespace) (appstack_leader{namespace=\"x\"} < 1" })), /unclosed left parenthesis|unexpected/);
  assert.match(errors(broken({ for: "five minutes" })), /not a valid duration|for/);
  assert.match(errors(broken({ severity: "critical" })), /field severity not found/);
  assert.match(errors(broken({ annotations: { summary: "{{ $labels.namespace " } })), /annotation "summary"/);
  assert.match(errors(broken({}, [rule])), /defined twice/);
});

test("every metric the rules read is one the operator registers, read from the code", () => {
  const served = seriesNames();
  assert.ok(served.has("appstack_leader") && served.has("appstack_stalled_objects") && served.has("appstack_shard_members"), "the registries hold the operator's metrics, the sharding's with them");
  const { rules } = checkRules(ruleGroups("appstack-system"));
  assert.deepEqual(unservedMetrics(rules, served), []);
  // The check fails on a name the operator does not serve, and on a selector with no name.
  const misspelt = ruleGroups("appstack-system");
  const rule = misspelt.groups[0]!.rules[0]!;
  rule["expr"] = String(rule["expr"]).replaceAll("appstack_leader", "appstack_is_leader");
  misspelt.groups[0]!.rules.push({ ...rule, alert: "Unnamed", expr: '{namespace="appstack-system"} == 0' });
  assert.deepEqual(unservedMetrics(checkRules(misspelt).rules, served), [
    "AppstackNoLeader: appstack_is_leader is not a metric the operator serves",
    "Unnamed: 1 selector(s) without a metric name",
    "Unnamed: reads no metric",
  ]);
});

test("each rule selects the install's own namespace, and only its own", () => {
  for (const group of ruleGroups("team-ops").groups) {
    for (const rule of group.rules) {
      const expr = String(rule["expr"]);
      assert.ok(!expr.includes('"NS"'), `${String(rule["alert"])}: ${expr}`);
      const selectors = [...expr.matchAll(/appstack_[a-z_]+\{([^}]*)\}/g)].map((match) => match[1]!);
      assert.ok(selectors.length > 0 && selectors.every((labels) => labels.includes('namespace="team-ops"')), `${String(rule["alert"])}: ${expr}`);
    }
  }
});

test(`each alert has a severity, a summary, a description and a runbook_url to its own entry in ${runbookPage}`, () => {
  const names = new Set<string>();
  for (const rule of ruleGroups("appstack-system").groups.flatMap((group) => group.rules)) {
    const alert = String(rule["alert"]);
    const labels = rule["labels"] as Record<string, string>;
    const annotations = rule["annotations"] as Record<string, string>;
    assert.ok(["critical", "warning"].includes(labels["severity"] ?? ""), alert);
    assert.ok(annotations["summary"] && annotations["description"], alert);
    assert.equal(annotations["runbook_url"], `${runbookPage}#${runbookAnchor(alert)}`);
    assert.ok(headings.has(runbookAnchor(alert)), `${runbookPage} has no heading for ${alert} (#${runbookAnchor(alert)})`);
    assert.ok(!names.has(alert), alert);
    names.add(alert);
  }
  // An alert without its entry is found.
  assert.ok(!headings.has(runbookAnchor("AppstackNoSuchAlert")));
});

test(`${runbookPage}'s table of alerts is the one generated from the rules`, () => {
  const page = pageAlerts(runbook);
  assert.ok(page !== undefined, `${runbookPage} has the generated block's markers (${alertsBlock.beginMarker})`);
  assert.equal(page, alertsReference(), "regenerate it: node --import tsx operator/cmd/alerts-reference.ts --write");
});

test(`${runbookPage} names every condition reason a person may meet, each with an entry`, () => {
  // Available is the one reason that needs no one.
  const reasons = Object.keys(conditionReasons).filter((reason) => reason !== "Available");
  const index = runbook.slice(0, runbook.indexOf(alertsBlock.beginMarker));
  assert.deepEqual(reasons.filter((reason) => !index.includes(`\`${reason}\``)), [], "reasons missing from the index by symptom");
  // Each link of the index leads to a heading of the page (docs-links checks the other pages' links).
  const local = [...index.matchAll(/\]\(#([^)]+)\)/g)].map((match) => match[1]!);
  assert.ok(local.length > 10);
  assert.deepEqual(local.filter((anchor) => !headings.has(anchor)), []);
});
