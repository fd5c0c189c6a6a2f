// The metrics reference of docs/monitoring.md, generated from the registrations themselves: the
// operator's registry is built as the operator builds it (operator/manager/metrics.ts, with the
// metrics per object of object-metrics.ts and the sharding's of shard-metrics.ts), and each metric
// it holds is a row: its name, type, labels and help, the text Prometheus shows. A metric that
// only some settings register says which. test/unit/metrics-reference.test.ts fails when the
// page's table is not this one; `node --import tsx operator/cmd/metrics-reference.ts --write`
// writes it.
import type { MetricObject, Registry } from "prom-client";
import { OperatorMetrics } from "../manager/metrics.ts";
import { ShardMetrics } from "../manager/shard-metrics.ts";
import { blockText, generatedBlock, markdownTable, runAsWriter, writeBlock } from "./generated-blocks.ts";

export const metricsPage = "docs/monitoring.md";

/** The prefix of the Node.js process metrics (prom-client's collectDefaultMetrics). */
export const processPrefix = "appstack_process_";

export interface MetricRow {
  readonly name: string;
  readonly type: string;
  readonly labels: readonly string[];
  readonly help: string;
  /** The setting it needs, if it is not served always. */
  readonly servedWith?: string;
}

const idle = () => ({ depth: 0, active: 0 });

function rowsOf(registry: Registry, servedWith?: string): MetricRow[] {
  return registry.getMetricsAsArray().map((metric: MetricObject & { labelNames?: readonly string[] }) => ({
    name: metric.name,
    type: String(metric.type),
    labels: [...(metric.labelNames ?? [])],
    help: metric.help,
    ...(servedWith ? { servedWith } : {}),
  }));
}

/** Every metric the operator can serve, as it registers them: always, with metrics per object, with sharding. */
export function registeredMetrics(): MetricRow[] {
  const always = rowsOf(new OperatorMetrics(idle).registry);
  const known = new Set(always.map((row) => row.name));
  const perObject = rowsOf(new OperatorMetrics(idle, undefined, { objectMetrics: true }).registry, "`APPSTACK_OBJECT_METRICS=true`").filter((row) => !known.has(row.name));
  const sharded = new OperatorMetrics(idle);
  new ShardMetrics(sharded.registry, () => 0);
  const sharding = rowsOf(sharded.registry, "`APPSTACK_SHARDING=true`").filter((row) => !known.has(row.name));
  return [...always, ...perObject, ...sharding];
}

const code = (text: string) => `\`${text}\``;
const labelsCell = (labels: readonly string[]) => (labels.length ? labels.map(code).join(", ") : "-");

/** The tables, as Markdown: the operator's metrics, then the Node.js process's. */
export function metricsReference(): string {
  const metrics = registeredMetrics();
  const own = metrics.filter((row) => !row.name.startsWith(processPrefix));
  const process = metrics.filter((row) => row.name.startsWith(processPrefix));
  return [
    markdownTable(
      ["metric", "type", "labels", "served", "meaning"],
      own.map((row) => [code(row.name), row.type, labelsCell(row.labels), row.servedWith ? `with ${row.servedWith}` : "always", row.help]),
    ),
    "",
    `The Node.js process's metrics, prom-client's defaults, all prefixed \`${processPrefix}\`, always served:`,
    "",
    markdownTable(
      ["metric", "type", "labels", "meaning"],
      process.map((row) => [code(row.name), row.type, labelsCell(row.labels), row.help]),
    ),
  ].join("\n");
}

export const metricsBlock = generatedBlock("metrics reference", "metrics-reference.ts", metricsPage, metricsReference);

/** The page's text between the markers, or undefined without them. */
export const pageMetrics = (page: string): string | undefined => blockText(page, metricsBlock);

if (runAsWriter("metrics-reference.ts")) writeBlock(metricsBlock);
