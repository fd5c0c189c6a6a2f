// Samples a process tree from /proc: peak memory of the root and of the whole tree, the Pulumi
// processes it started, and CPU seconds (own, and of the children it reaped) at the end.
import { readFileSync } from "node:fs";
import { commandLine, processIds, processStat } from "../../operator/base/procfs.ts";

const ticksPerSecond = 100; // USER_HZ on Linux
const pageKiB = 4;

interface Stat {
  pid: number;
  /** When the process started (clock ticks since boot): with the pid, names one process for good. */
  start: number;
  ppid: number;
  comm: string;
  utime: number;
  stime: number;
  cutime: number;
  cstime: number;
  rssKiB: number;
}

function readStat(pid: number): Stat | undefined {
  const stat = processStat(pid);
  if (!stat) return undefined;
  const f = stat.fields;
  return { pid, start: Number(f[19]), comm: stat.command, ppid: Number(f[1]), utime: Number(f[11]), stime: Number(f[12]), cutime: Number(f[13]), cstime: Number(f[14]), rssKiB: Number(f[21]) * pageKiB };
}

function readStats(): Stat[] {
  return processIds().map(readStat).filter((s): s is Stat => s !== undefined);
}

function readPssKiB(pid: number): number {
  try {
    return Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? 0);
  } catch {
    return 0; // gone between the listing and the read
  }
}

/** Processes whose command line mentions `marker`, found the way `ps` would. */
export function processesMentioning(marker: string): number[] {
  return processIds().filter((pid) => commandLine(pid)?.join("\0").includes(marker));
}

/** The processes under `root` (its whole tree), now; only those whose command name is `comm` when given. */
export function processesUnder(root: number, comm?: string): number[] {
  const stats = readStats();
  const found: number[] = [];
  const stack = [root];
  while (stack.length) {
    const pid = stack.pop()!;
    for (const child of stats.filter((s) => s.ppid === pid)) {
      if (comm === undefined || child.comm === comm) found.push(child.pid);
      stack.push(child.pid);
    }
  }
  return found;
}

/**
 * Signals a process tree: its process group first, so that nothing new starts meanwhile, then
 * every process below it (plugins run in groups of their own). A process that ended meanwhile
 * (a signal is delivered when the process next runs, so a group's members may still reap or
 * exit a child after the group's signal) needs no signal: ESRCH is not an error here.
 */
export function signalTree(root: number, signal: "SIGSTOP" | "SIGCONT" | "SIGKILL"): void {
  const send = (pid: number) => {
    try {
      process.kill(pid, signal);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
    }
  };
  if (signal !== "SIGCONT") send(-root);
  for (const pid of [root, ...processesUnder(root)]) send(pid);
}

export class ProcessTreeSampler {
  peakRootKiB = 0;
  peakTreeKiB = 0;
  /**
   * The tree's peak PSS: each page shared by several processes (the Pulumi CLI's and the provider's
   * code, mapped by every copy) counted once in all, where the sum of RSS counts it per process.
   * Sampled every tenth time: reading smaps_rollup walks a process's page tables.
   */
  peakTreePssKiB = 0;
  private samples = 0;
  /** The root's RSS at the last sample. */
  rootKiB = 0;
  /** The tree's PSS at the last sample that read it. */
  treePssKiB = 0;
  private readonly pulumiPids = new Set<number>();
  /** Every process seen below the root, by pid and start time: its command name and its CPU ticks at the last sample. */
  private readonly seenCpu = new Map<string, { comm: string; ticks: number }>();
  /** The keys of seenCpu the last sample found running. */
  private running = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  private readonly root: number;

  constructor(root: number) {
    this.root = root;
  }

  start(intervalMs = 100): void {
    this.timer = setInterval(() => this.sample(), intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Pulumi CLI processes seen so far (`pulumi` command name). */
  get pulumiProcesses(): number {
    return this.pulumiPids.size;
  }

  resetPulumiCount(): void {
    this.pulumiPids.clear();
  }

  /**
   * CPU seconds of the processes seen below the root, summed by command name (the kernel keeps 15
   * characters: `pulumi-resource` for the provider plugins), each as of the last sample that saw
   * it: a process loses at most the CPU of its last sampling interval, which for an engine's
   * plugin is its idle wait for the engine to close it. Exact totals are in cpuSeconds().children.
   */
  cpuByCommand(which: "all" | "running" = "all"): Map<string, number> {
    const sums = new Map<string, number>();
    for (const [key, { comm, ticks }] of this.seenCpu) {
      if (which === "running" && !this.running.has(key)) continue;
      sums.set(comm, (sums.get(comm) ?? 0) + ticks / ticksPerSecond);
    }
    return sums;
  }

  cpuSeconds(): { own: number; children: number } | undefined {
    const stat = readStat(this.root);
    if (!stat) return undefined;
    return { own: (stat.utime + stat.stime) / ticksPerSecond, children: (stat.cutime + stat.cstime) / ticksPerSecond };
  }

  private sample(): void {
    const stats = readStats();
    const children = new Map<number, Stat[]>();
    for (const s of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s]);
    const commOf = new Map(stats.map((s) => [s.pid, s.comm]));
    const rootStat = stats.find((s) => s.pid === this.root);
    if (!rootStat) return;
    let total = 0;
    let pss = 0;
    const running = new Set<string>();
    const withPss = this.samples++ % 10 === 0;
    const stack = [rootStat];
    while (stack.length) {
      const s = stack.pop()!;
      total += s.rssKiB;
      if (withPss) pss += readPssKiB(s.pid);
      // A child of a `pulumi` process named `pulumi` is a plugin caught between fork and exec.
      const plugin = commOf.get(s.ppid) === "pulumi";
      if (s.comm === "pulumi" && !plugin) this.pulumiPids.add(s.pid);
      if (s !== rootStat) {
        this.seenCpu.set(`${s.pid}@${s.start}`, { comm: s.comm, ticks: s.utime + s.stime });
        running.add(`${s.pid}@${s.start}`);
      }
      stack.push(...(children.get(s.pid) ?? []));
    }
    this.running = running;
    this.rootKiB = rootStat.rssKiB;
    this.peakRootKiB = Math.max(this.peakRootKiB, rootStat.rssKiB);
    this.peakTreeKiB = Math.max(this.peakTreeKiB, total);
    if (withPss) this.treePssKiB = pss;
    this.peakTreePssKiB = Math.max(this.peakTreePssKiB, pss);
  }
}

/** What the bench reads of a reconciler's processes: one sampled tree, or several read as one (SamplerGroup). */
export type TreeReadings = Pick<ProcessTreeSampler, "pulumiProcesses" | "resetPulumiCount" | "cpuByCommand" | "cpuSeconds" | "rootKiB" | "treePssKiB" | "peakRootKiB" | "peakTreeKiB" | "peakTreePssKiB">;

/**
 * Several operator replicas' trees, each sampled on its own, read as one: every figure is the sum
 * of theirs. A peak is the sum of their peaks, which they need not have reached at the same time.
 */
export class SamplerGroup implements TreeReadings {
  readonly samplers: readonly ProcessTreeSampler[];

  constructor(samplers: readonly ProcessTreeSampler[]) {
    this.samplers = samplers;
  }

  private sum(pick: (sampler: ProcessTreeSampler) => number): number {
    return this.samplers.reduce((total, sampler) => total + pick(sampler), 0);
  }

  get pulumiProcesses(): number { return this.sum((s) => s.pulumiProcesses); }
  get rootKiB(): number { return this.sum((s) => s.rootKiB); }
  get treePssKiB(): number { return this.sum((s) => s.treePssKiB); }
  get peakRootKiB(): number { return this.sum((s) => s.peakRootKiB); }
  get peakTreeKiB(): number { return this.sum((s) => s.peakTreeKiB); }
  get peakTreePssKiB(): number { return this.sum((s) => s.peakTreePssKiB); }

  resetPulumiCount(): void {
    for (const sampler of this.samplers) sampler.resetPulumiCount();
  }

  cpuByCommand(which: "all" | "running" = "all"): Map<string, number> {
    const sums = new Map<string, number>();
    for (const sampler of this.samplers) for (const [comm, seconds] of sampler.cpuByCommand(which)) sums.set(comm, (sums.get(comm) ?? 0) + seconds);
    return sums;
  }

  /** The trees still running, summed; undefined once none is. */
  cpuSeconds(): { own: number; children: number } | undefined {
    const each = this.samplers.map((sampler) => sampler.cpuSeconds()).filter((cpu) => cpu !== undefined);
    if (each.length === 0) return undefined;
    return { own: each.reduce((sum, cpu) => sum + cpu.own, 0), children: each.reduce((sum, cpu) => sum + cpu.children, 0) };
  }
}
