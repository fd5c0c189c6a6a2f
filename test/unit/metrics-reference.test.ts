// The metrics reference (docs/monitoring.md) is generated from the metrics' registrations, and
// the pages name only metrics the operator serves. Each test fails when a metric is registered
// without its row, a row names no metric, or a page names a metric that does not exist.
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot } from "../../toolchain/tools.ts";
import { metricsBlock, metricsPage, metricsReference, pageMetrics, processPrefix, registeredMetrics } from "../../operator/cmd/metrics-reference.ts";

const source = (path: string) => readFileSync(join(repoRoot, path), "utf8");

/** The files under a folder of the repository whose name ends with `suffix`, its sub-folders included. */
function filesUnder(folder: string, suffix: string): string[] {
  return readdirSync(join(repoRoot, folder), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(`${folder}/${entry.name}`, suffix) : entry.name.endsWith(suffix) ? [`${folder}/${entry.name}`] : [],
  );
}

const registered = new Set(registeredMetrics().map((row) => row.name));

test(`${metricsPage}'s metrics table is the one generated from the registrations`, () => {
  const page = pageMetrics(source(metricsPage));
  assert.ok(page !== undefined, `${metricsPage} has the generated block's markers (${metricsBlock.beginMarker})`);
  assert.equal(page, metricsReference(), "regenerate it: node --import tsx operator/cmd/metrics-reference.ts --write");
});

test("every metric the operator's sources register is one the generator finds, so it has its row", () => {
  const named = filesUnder("operator", ".ts").flatMap((path) =>
    [...source(path).matchAll(/new (?:Counter|Gauge|Histogram|Summary)\(\{\s*name: "([a-z0-9_]+)"/g)].map((match) => ({ path, name: match[1]! })),
  );
  assert.ok(named.length > 20, `only ${named.length} registrations found: the scan is not reading the sources`);
  assert.deepEqual(named.filter(({ name }) => !registered.has(name)), [], "registered in the code, but not in the registries metrics-reference.ts builds");
});

test("every row of the page names a registered metric", () => {
  const page = pageMetrics(source(metricsPage)) ?? "";
  const rows = [...page.matchAll(/^\| `([a-z0-9_]+)` \|/gm)].map((match) => match[1]!);
  assert.equal(rows.length, registered.size, "one row per metric");
  assert.deepEqual(rows.filter((name) => !registered.has(name)), []);
});

/** Whether a name a page gives is a metric served: itself, a histogram's series, or a family by its prefix (`appstack_object_*`). */
function served(name: string): boolean {
  if (name.endsWith("*")) return [...registered].some((metric) => metric.startsWith(name.slice(0, -1)));
  return registered.has(name) || registered.has(name.replace(/_(bucket|sum|count)$/, "")) || name === processPrefix;
}

test("the pages name only metrics the operator serves", () => {
  const pages = ["README.md", "CONTRIBUTING.md", ...filesUnder("docs", ".md")];
  const unknown = pages.flatMap((page) => [...source(page).matchAll(/\bappstack_[a-z0-9_]+\*?/g)].filter((match) => !served(match[0])).map((match) => `${page}: ${match[0]}`));
  assert.ok(pages.includes("docs/development/benchmark.md"), "the scan reads docs/development/ too");
  assert.deepEqual(unknown, []);
});
