// Each measured figure lives on one page, docs/measurements.md, so two pages can never disagree on
// it: every other page links to that page's anchors. A figure here is a number with a unit of
// time, size, share or ratio (test/helpers/docs-figures.ts); design targets and code-defined limits
// are not measurements, and are left out when they sit in a table column headed as a target, a
// limit or a default. A code-defined value stated in prose is allowed only through the list below,
// each entry with why and the line of code that defines it, checked here so that the list cannot
// outlive the code. CHANGELOG.md is history by design, and is not read.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { measuredFigures } from "../helpers/docs-figures.ts";
import { repoRoot } from "../../toolchain/tools.ts";

const measurementsPage = "docs/measurements.md";

/** The README, CONTRIBUTING.md and every page under docs/, sub-folders included. */
function pages(): string[] {
  const under = (folder: string): string[] =>
    readdirSync(join(repoRoot, folder), { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? under(`${folder}/${entry.name}`) : entry.name.endsWith(".md") ? [`${folder}/${entry.name}`] : [],
    );
  return ["README.md", "CONTRIBUTING.md", ...under("docs")].filter((page) => existsSync(join(repoRoot, page)));
}

interface Allowed {
  /** The figure as the scanner normalises it. */
  readonly figure: string;
  /** Why it is not a measurement. */
  readonly why: string;
  /** Where the code defines it: a file and a pattern its text must match. */
  readonly code: readonly [file: string, pattern: RegExp];
}

/** Code-defined values that pages state in prose. Short on purpose: a default belongs in a table headed "default". */
const allowed: readonly Allowed[] = [
  { figure: "15 s", why: "the leader and shard Leases' duration, client-go's", code: ["operator/manager/leader.ts", /leaseDurationSeconds: 15\b/] },
  { figure: "10 s", why: "the leader's renew deadline, client-go's", code: ["operator/manager/leader.ts", /renewDeadlineMs: 10_000/] },
  { figure: "2 s", why: "the lease calls' retry period, client-go's", code: ["operator/manager/leader.ts", /retryPeriodMs: 2_000/] },
  { figure: "5 s", why: "how soon an object whose stack is locked is tried again", code: ["operator/controller/reporting.ts", /busyRetryMs = 5_000/] },
  { figure: "30 s", why: "every Kubernetes API request's deadline; also an idle kept provider's lifetime", code: ["operator/kube/clients.ts", /apiRequestTimeoutMs = 30_000/] },
  { figure: "300 s", why: "the default deadline of one Pulumi operation", code: ["operator/manager/config.ts", /"operation-timeout-seconds", "APPSTACK_OPERATION_TIMEOUT_SECONDS"\), 300,/] },
  { figure: "120 s", why: "the default time an object's pods may fail to start before it is Stalled", code: ["operator/controller/status.ts", /defaultPodStartTimeoutMs = 120_000/] },
  { figure: "60 s", why: "the default shutdown grace for running operations", code: ["operator/manager/config.ts", /"APPSTACK_SHUTDOWN_GRACE_SECONDS"\], 60,/] },
  { figure: "5 minutes", why: "the longest backoff between retries (APPSTACK_RETRY_MAX_MS)", code: ["operator/manager/config.ts", /"APPSTACK_RETRY_MAX_MS"\], 300_000,/] },
];

test(`no page but ${measurementsPage} states a measured figure; the others link to it`, () => {
  const permitted = new Map(allowed.map((entry) => [entry.figure, entry]));
  const found = pages()
    .filter((page) => page !== measurementsPage)
    .flatMap((page) =>
      measuredFigures(readFileSync(join(repoRoot, page), "utf8"))
        .filter((figure) => !permitted.has(figure.figure))
        .map((figure) => `${page}:${figure.line}: ${figure.text}`),
    );
  assert.deepEqual(found, [], `measured figures belong on ${measurementsPage} alone: link to its anchor instead`);
});

test("every allowed figure is defined where its entry says, and is still used by a page", () => {
  const used = new Set(pages().flatMap((page) => measuredFigures(readFileSync(join(repoRoot, page), "utf8")).map((figure) => figure.figure)));
  for (const { figure, code: [file, pattern] } of allowed) {
    assert.match(readFileSync(join(repoRoot, file), "utf8"), pattern, `${figure}: ${file} no longer defines it`);
    assert.ok(used.has(figure), `${figure} is allowed but no page states it: drop it from the list`);
  }
});

test(`${measurementsPage} holds figures, and the scan finds them`, () => {
  assert.ok(measuredFigures(readFileSync(join(repoRoot, measurementsPage), "utf8")).length > 50);
});

test("the scan: figures in prose and table cells, not in code or in target, limit and default columns", () => {
  const page = [
    "It took 243.7 s, about 4 minutes, 1,702.3 s in all, 2.36x the baseline; 60% busy, 140 MiB, 0.4 GiB, 0.3 to 0.6 CPU s.",
    "Kubernetes 1.30 or later, Node.js 24, port 11211, 3 replicas, v1.34.4, `--timeout=120s`.",
    "```sh",
    "sleep 10s  # 5 MiB",
    "```",
    "| figure | target | measured |",
    "|---|---|---|",
    "| 100 new Apps | at most 2x | 1.05x |",
    "",
    "| setting | default |",
    "|---|---|",
    "| `APPSTACK_RESYNC_SECONDS` | 600 s |",
    "",
    "| what | figure |",
    "|---|---|",
    "| a restart | 2.9 s |",
  ].join("\n");
  assert.deepEqual(
    measuredFigures(page).map((figure) => `${figure.line}: ${figure.figure}`),
    ["1: 243.7 s", "1: 4 minutes", "1: 1,702.3 s", "1: 2.36x", "1: 60%", "1: 140 MiB", "1: 0.4 GiB", "1: 0.3 to 0.6 CPU s", "8: 1.05x", "16: 2.9 s"],
  );
});
