// The scale round's table of appstack's replicas (BENCH_SCALE_REPLICAS): each one's share of the
// objects, its memory and its CPU, from its own sampled process tree and its own /metrics.
import type { ReplicaReading } from "./replicas.ts";

export interface ReplicaFigures {
  readonly name: string;
  /** Objects it held at the end (appstack_shard_objects; unsharded, all of them). */
  readonly share: number;
  /** Ready with no object, after the round of new objects, and at the end of the quiet minute. */
  readonly ready: ReplicaReading;
  readonly afterRound: ReplicaReading;
  readonly quiet: ReplicaReading;
  /** During the round: the process's RSS and its tree's PSS at their highest. */
  readonly peak: { readonly rssKiB: number; readonly pssKiB: number };
}

const mib = (kib: number) => (kib / 1024).toFixed(0);

function row(label: string, f: ReplicaFigures, n: number): string {
  const share = `${f.share} (${((100 * f.share) / n).toFixed(0)}%)`;
  const rss = `${mib(f.ready.rssKiB)} / ${mib(f.quiet.rssKiB)} / ${mib(f.peak.rssKiB)}`;
  const pss = `${mib(f.ready.pssKiB)} / ${mib(f.quiet.pssKiB)} / ${mib(f.peak.pssKiB)}`;
  const round = `${(f.afterRound.cpu.own - f.ready.cpu.own).toFixed(1)} / ${(f.afterRound.cpu.children - f.ready.cpu.children).toFixed(1)}`;
  const quiet = (f.quiet.cpu.own - f.afterRound.cpu.own).toFixed(2);
  return `| ${label} | ${share} | ${rss} | ${pss} | ${round} | ${quiet} |`;
}

/** One row per replica and their sum (a sum of peaks: the replicas need not have peaked at once). */
export function replicaTable(replicas: readonly ReplicaFigures[], n: number): string {
  const sum = (pick: (f: ReplicaFigures) => number) => replicas.reduce((total, f) => total + pick(f), 0);
  const summed = (pick: (f: ReplicaFigures) => ReplicaReading): ReplicaReading => ({
    rssKiB: sum((f) => pick(f).rssKiB),
    pssKiB: sum((f) => pick(f).pssKiB),
    cpu: { own: sum((f) => pick(f).cpu.own), children: sum((f) => pick(f).cpu.children) },
  });
  const all: ReplicaFigures = {
    name: "all", share: sum((f) => f.share), ready: summed((f) => f.ready), afterRound: summed((f) => f.afterRound), quiet: summed((f) => f.quiet),
    peak: { rssKiB: sum((f) => f.peak.rssKiB), pssKiB: sum((f) => f.peak.pssKiB) },
  };
  return [
    `| appstack replica, ${n} Apps | its share at the end | operator RSS, MiB: ready with no object / all Ready, quiet / peak in the round | tree PSS, MiB: the same | CPU s in the round: operator / its engines | CPU s of the operator in the quiet minute |`,
    "|---|---|---|---|---|---|",
    ...replicas.map((f) => row(f.name, f, n)),
    ...(replicas.length > 1 ? [row("all replicas (sums)", all, n)] : []),
  ].join("\n");
}
