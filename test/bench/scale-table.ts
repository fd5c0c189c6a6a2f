// The Markdown the scale round (scale.ts) prints for docs/measurements.md.
import { cpus } from "node:os";
import { requestTable, type RequestRate } from "./apiserver-requests.ts";
import { cpuTable, totalCpu, type CpuSplit } from "./cpu.ts";
import { replicaTable, type ReplicaFigures } from "./replica-table.ts";
import type { FolderSize, StackLs, TableSize } from "./state-size.ts";
import type { Round } from "./tables.ts";

/** Where the stacks are: each replica's file backend in its state folder, or Pulumi's table on the shared PostgreSQL server. */
export type BackendSize = { readonly kind: "file"; readonly folder: FolderSize } | { readonly kind: "postgres"; readonly table: TableSize };

export interface ScaleFigures {
  readonly n: number;
  readonly replicas: readonly ReplicaFigures[];
  readonly nodes: number;
  readonly concurrency: number;
  readonly baseline: Round;
  readonly created: Round;
  /** A smaller round of new Apps on the same replicas just before `created`, if one ran. */
  readonly reference?: Round | undefined;
  /** appstack's tree during the round of new Apps, at its peak. */
  readonly peak: { readonly rootKiB: number; readonly treeKiB: number; readonly treePssKiB: number };
  /** The operator's RSS and its tree's PSS once ready with no object, and in the quiet minute with all of them. */
  readonly startRssKiB: number;
  readonly startPssKiB: number;
  readonly idleRssKiB: number;
  readonly idlePssKiB: number;
  readonly quiet: { readonly split: CpuSplit; readonly pulumiProcesses: number; readonly reconciles: number; readonly seconds: number };
  readonly restart: { readonly split: CpuSplit; readonly seconds: number; readonly pulumiProcesses: number; readonly reconciles: number; readonly operations: number; readonly ready: number };
  /** The replicas' state folders, added up. */
  readonly state: FolderSize;
  readonly backend: BackendSize;
  readonly requests: { readonly baseline: RequestRate; readonly round: RequestRate; readonly quiet: RequestRate; readonly restart: RequestRate };
  readonly stackLs: StackLs;
  /** The 1-minute load average, every 10 s of the run. */
  readonly load: number[];
}

const mib = (kib: number) => `${(kib / 1024).toFixed(0)} MiB`;
const perThousand = (value: number, n: number) => (value / n) * 1000;

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

/** The state folders, and the backend: the file backend's folder in them, or the rows of Pulumi's table on PostgreSQL. */
function storageRows(f: ScaleFigures): string[] {
  const { n, state, backend } = f;
  const folders = f.replicas.length === 1 ? "state folder" : `${f.replicas.length} replicas' state folders`;
  const held = backend.kind === "file" ? "file backend, engines' home, workspace" : "engines' home, workspace; the stacks are in PostgreSQL";
  const stateRow = `| ${folders} on disk (${held}) | ${(state.diskBytes / 2 ** 20).toFixed(1)} MiB in ${state.files} files (${(state.bytes / 2 ** 20).toFixed(1)} MiB of content) | ${(perThousand(state.diskBytes, n) / 2 ** 20).toFixed(1)} MiB; ${kib(state.diskBytes / n)} per object |`;
  if (backend.kind === "file") {
    const { folder } = backend;
    return [stateRow, `| of it the backend (checkpoints, their .attrs and .bak, locks, history) | ${(folder.diskBytes / 2 ** 20).toFixed(1)} MiB in ${folder.files} files | ${kib(folder.diskBytes / n)} per object |`];
  }
  const { table } = backend;
  return [stateRow, `| the PostgreSQL backend: rows of \`pulumi_state\` (checkpoints, backups, history, locks) / the table's size with indexes and TOAST | ${table.rows} rows, ${(table.bytes / 2 ** 20).toFixed(1)} MiB | ${(table.rows / n).toFixed(1)} rows, ${kib(table.bytes / n)} per object |`];
}

/** The CPU of one new App in the large round against the reference round. */
function growthLine(reference: Round, created: Round): string {
  const [small, large] = [totalCpu(reference.cpu) / reference.n, totalCpu(created.cpu) / created.n];
  const change = (large / small - 1) * 100;
  return `CPU per new App: ${large.toFixed(3)} s at ${created.n} against ${small.toFixed(3)} s at ${reference.n} (${change >= 0 ? "+" : ""}${change.toFixed(0)}%).`;
}

export function scaleTable(f: ScaleFigures): string {
  const { n, baseline, created } = f;
  const s = (x: number) => `${x.toFixed(1)} s`;
  const controlPlane = (split: CpuSplit) => split.apiServer + split.etcd + split.otherControlPlane;
  const sortedLoad = [...f.load].sort((a, b) => a - b);
  const median = (xs: number[]) => xs[Math.floor(xs.length / 2)] ?? NaN;
  const ls = f.stackLs;
  const count = f.replicas.length;
  const operator = count === 1 ? "operator process" : `${count} operator processes (summed)`;
  return [
    `| ${n} new Apps at once | appstack (${count === 1 ? "one replica" : `${count} replicas, sharded`}) | baseline | ratio |`,
    "|---|---|---|---|",
    `| all Ready | ${s(created.totalSeconds)} | ${s(baseline.totalSeconds)} | ${(created.totalSeconds / baseline.totalSeconds).toFixed(2)}x |`,
    `| p50 / p95 per App | ${created.p50.toFixed(1)} / ${created.p95.toFixed(1)} s | ${baseline.p50.toFixed(1)} / ${baseline.p95.toFixed(1)} s | - |`,
    `| Apps brought to Ready per second | ${(n / created.totalSeconds).toFixed(1)} | ${(n / baseline.totalSeconds).toFixed(1)} | - |`,
    `| CPU seconds per App, everything (the split below) | ${(totalCpu(created.cpu) / n).toFixed(2)} | ${(totalCpu(baseline.cpu) / n).toFixed(2)} | ${(totalCpu(created.cpu) / totalCpu(baseline.cpu)).toFixed(1)}x |`,
    `| Pulumi processes started | ${created.pulumiProcesses} | 0 | - |`,
    `| appstack's Pulumi operations and failed reconciles (its metrics) | ${created.operations ?? "-"} | - | - |`,
    "",
    cpuTable([
      ...(f.reference ? [{ title: `appstack: ${f.reference.n} new Apps, just before`, split: f.reference.cpu, n: f.reference.n, seconds: f.reference.totalSeconds }] : []),
      { title: `appstack: ${n} new Apps`, split: created.cpu, n, seconds: created.totalSeconds },
      { title: "baseline: the same", split: baseline.cpu, n, seconds: baseline.totalSeconds },
    ], cpus().length),
    ...(f.reference ? ["", growthLine(f.reference, created)] : []),
    "",
    `| appstack with ${n} Apps in place | figure | per 1,000 objects |`,
    "|---|---|---|",
    `| ${operator} RSS: ready with no object / all ${n} Ready, quiet | ${mib(f.startRssKiB)} / ${mib(f.idleRssKiB)} | ${mib(perThousand(f.idleRssKiB - f.startRssKiB, n))} more |`,
    `| PSS of the ${count === 1 ? "operator" : "operators"} and everything ${count === 1 ? "it" : "they"} started: ready with no object / all Ready, quiet | ${mib(f.startPssKiB)} / ${mib(f.idlePssKiB)} | ${mib(perThousand(f.idlePssKiB - f.startPssKiB, n))} more |`,
    `| peak while the ${n} were made: ${operator} RSS / tree RSS sum / tree PSS | ${mib(f.peak.rootKiB)} / ${mib(f.peak.treeKiB)} / ${mib(f.peak.treePssKiB)} | - |`,
    `| a quiet minute (${f.quiet.seconds} s, no resync due): CPU s of the operator / its engines / the control plane | ${f.quiet.split.reconciler.toFixed(2)} / ${(f.quiet.split.engine + f.quiet.split.provider).toFixed(2)} / ${controlPlane(f.quiet.split).toFixed(2)} (${f.quiet.pulumiProcesses} Pulumi processes, ${f.quiet.reconciles} reconciles) | ${perThousand(f.quiet.split.reconciler, n).toFixed(2)} operator CPU s a minute |`,
    `| a restart: until every object is reconciled once more (a resync's work, and the start) | ${s(f.restart.seconds)}, ${f.restart.reconciles} reconciles, ${f.restart.operations} Pulumi operations, ${f.restart.pulumiProcesses} Pulumi processes; ${f.restart.ready} of ${n} Ready after | ${s(perThousand(f.restart.seconds, n))} |`,
    `| the restart's CPU s: operator / engines / control plane | ${f.restart.split.reconciler.toFixed(1)} / ${(f.restart.split.engine + f.restart.split.provider).toFixed(1)} / ${controlPlane(f.restart.split).toFixed(1)} | ${perThousand(totalCpu(f.restart.split), n).toFixed(1)} in all |`,
    ...storageRows(f),
    `| \`pulumi stack ls --json\` against the backend (${ls.stacks} stacks${f.backend.kind === "postgres" ? "; on PostgreSQL with PULUMI_DIY_BACKEND_PARALLEL=1, see state-size.ts" : ""}), median of ${ls.seconds.length} | ${s(median(ls.seconds))} (min ${ls.seconds[0]!.toFixed(1)}, max ${ls.seconds.at(-1)!.toFixed(1)}); CPU ${ls.cpuSeconds.map((c) => c.toFixed(1)).join(", ")} s | ${s(perThousand(median(ls.seconds), ls.stacks))} |`,
    "",
    replicaTable(f.replicas, n),
    "",
    requestTable([
      { title: `baseline: its round of ${n} new Apps`, rate: f.requests.baseline },
      { title: `appstack: its round of ${n} new Apps`, rate: f.requests.round },
      { title: "appstack: the quiet minute", rate: f.requests.quiet },
      { title: "appstack: the restart, until every object is reconciled once more", rate: f.requests.restart },
    ], n),
    "",
    `Load average (1 min) during the run: min ${sortedLoad[0]?.toFixed(1)}, median ${median(sortedLoad).toFixed(1)}, max ${sortedLoad.at(-1)?.toFixed(1)} on ${cpus().length} cores; ${f.nodes} kwok nodes; concurrency ${f.concurrency}.`,
  ].join("\n");
}
