// Each measured figure lives on one page, docs/measurements.md, so two pages can never disagree on
// it: every other page links to that page's anchors. A figure here is a number with a unit of
// time, size, share or ratio (test/helpers/docs-figures.ts), or the same in words ("about a
// minute", "twice as fast": test/helpers/figures-in-words.ts); design targets and code-defined
// limits are not measurements, and are left out when they sit in a table column headed as a
// target, a limit or a default. A code-defined value stated in prose is allowed only through the
// list below, each entry with why and the line of code that defines it, checked here so that the
// list cannot outlive the code. CHANGELOG.md is history by design, and is not read.
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
  /**
   * The pages it is allowed on. Figures in words are allowed on their pages only: "a minute" may be
   * a default on one page and a measure ("about a minute") on another.
   */
  readonly pages?: readonly string[];
}

/**
 * Code-defined values that pages state in prose, and the settings of tests that pages describe. Short
 * on purpose: a default belongs in a table headed "default".
 */
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
  { figure: "five minutes", pages: ["docs/api.md"], why: "the longest backoff between retries (APPSTACK_RETRY_MAX_MS)", code: ["operator/manager/config.ts", /"APPSTACK_RETRY_MAX_MS"\], 300_000,/] },
  { figure: "five minutes", pages: ["docs/api.md"], why: "how long an Event's reason and message are not recorded again for an object", code: ["operator/controller/events.ts", /repeatWindowMs = 5 \* 60_000/] },
  { figure: "ten minutes", pages: ["docs/api.md"], why: "the run after which the kubelet resets a container's backoff, which the pod-trouble clock follows", code: ["operator/controller/pod-trouble.ts", /backoffResetMs = 600_000/] },
  { figure: "one second", pages: ["docs/api.md", "docs/configuration.md"], why: "APPSTACK_PROXY_SYNC_MS's default, kube-proxy's minSyncPeriod", code: ["operator/controller/service-endpoints.ts", /defaultProxySyncMs = 1_000/] },
  { figure: "a minute", pages: ["docs/how-it-works.md"], why: "how long a parsed OpenAPI document is shared between providers", code: ["toolchain/kubernetes-provider/schemas.go", /schemaLifetime = time\.Minute/] },
  { figure: "one minute", pages: ["docs/security.md"], why: "how long a token's review is remembered by /metrics, controller-runtime's", code: ["operator/manager/metrics-auth.ts", /reviewCacheTtlMs = \{ token: 60_000,/] },
  { figure: "thirty seconds", pages: ["docs/security.md"], why: "how long a denied user's review is remembered by /metrics, controller-runtime's", code: ["operator/manager/metrics-auth.ts", /denied: 30_000 \}/] },
  { figure: "half an hour", pages: ["docs/runbook.md"], why: "the window of the AppstackQueueGrowing alert", code: ["components/prometheus-rule.ts", /appstack_queue_depth\{namespace="NS"\}\[30m\]/] },
  { figure: "an hour", pages: ["docs/development/toolchain.md"], why: "the age after which a killed build's partial module copy is removed", code: ["toolchain/patch-module/main.go", /const abandoned = time\.Hour/] },
  { figure: "an hour", pages: ["docs/reliability.md"], why: "the clock skews the leader and stack-lock tests set up", code: ["test/unit/leader.test.ts", /new Date\(Date\.now\(\) - 3_600_000\)/] },
  { figure: "a minute", pages: ["docs/reliability.md"], why: "the node clock's lag the stack-lock test sets up", code: ["test/unit/stack-locks.test.ts", /nodeBehindMs = 60_000/] },
  { figure: "half of", pages: ["docs/reliability.md"], why: "the share of kills the kill test requires to land inside an operation", code: ["test/e2e/kills.test.ts", /duringOperation >= kills \/ 2/] },
];

/** Whether a figure found on a page is one the list allows there. */
function isAllowed(page: string, figure: string): boolean {
  return allowed.some((entry) => entry.figure === figure && (entry.pages === undefined || entry.pages.includes(page)));
}

test(`no page but ${measurementsPage} states a measured figure; the others link to it`, () => {
  const found = pages()
    .filter((page) => page !== measurementsPage)
    .flatMap((page) =>
      measuredFigures(readFileSync(join(repoRoot, page), "utf8"))
        .filter((figure) => !isAllowed(page, figure.figure))
        .map((figure) => `${page}:${figure.line}: ${figure.text}`),
    );
  assert.deepEqual(found, [], `measured figures belong on ${measurementsPage} alone: link to its anchor instead`);
});

test("every allowed figure is defined where its entry says, and is still used by a page it is allowed on", () => {
  const used = new Map(pages().map((page) => [page, new Set(measuredFigures(readFileSync(join(repoRoot, page), "utf8")).map((figure) => figure.figure))]));
  for (const { figure, pages: on, code: [file, pattern] } of allowed) {
    assert.match(readFileSync(join(repoRoot, file), "utf8"), pattern, `${figure}: ${file} no longer defines it`);
    const stating = [...used].filter(([page, figures]) => figures.has(figure) && (on === undefined || on.includes(page)));
    assert.ok(stating.length > 0, `${figure} is allowed but no page ${on ? `of ${on.join(", ")} ` : ""}states it: drop it from the list`);
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

test("the scan: figures in words, not ordinals, counts of runs or code", () => {
  const page = [
    "It takes about a minute, half a second at most, a few seconds more; twice as fast as the baseline,",
    "three times more CPU, a third of the memory, ten percent busy, gone within seconds. Every",
    "repair took a couple of minutes, an order of magnitude faster than half an",
    "hour, and a second or two.",
    "A second replica waits; a second `BatchRun` is refused; a third copy stays; it runs twice, 20 times at random; a second",
    "policy is installed.",
    "| what | figure |",
    "|---|---|",
    "| a restart | a few seconds |",
    "",
    "| setting | default |",
    "|---|---|",
    "| `APPSTACK_X` | one minute |",
    "```sh",
    "sleep 60  # about a minute",
    "```",
    "The lease is held `for a minute`; the watch is half-open.",
  ].join("\n");
  assert.deepEqual(
    measuredFigures(page).map((figure) => `${figure.line}: ${figure.figure}`),
    [
      "1: a minute",
      "1: half a second",
      "1: a few seconds",
      "1: twice as fast",
      "2: three times more",
      "2: a third of",
      "2: ten percent",
      "2: within seconds",
      "3: a couple of minutes",
      "3: an order of magnitude faster",
      "3: half an hour",
      "4: a second",
      "9: a few seconds",
    ],
  );
});
