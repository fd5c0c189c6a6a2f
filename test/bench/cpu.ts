// Where the CPU of one operation goes: the bench's rounds read it from /proc, split by who spent
// it, so that the ratio to the baseline can be read on any machine. The reconciler's tree
// (appstack: the operator, its Pulumi CLIs and their provider plugins; the baseline: one process)
// and the local control plane's processes, which both reconcilers load.
import { processStat } from "../../operator/base/procfs.ts";
import type { TreeReadings } from "../helpers/proctree.ts";

const ticksPerSecond = 100; // USER_HZ on Linux
/** The kernel keeps 15 characters of a command name. */
const providerCommand = "pulumi-resource";

export interface CpuSplit {
  /** The Pulumi CLI processes: the engine (all CPU of the reaped children but their provider plugins'). */
  readonly engine: number;
  /** The Kubernetes provider plugins. */
  readonly provider: number;
  /** The reconciler's own process: for appstack the controller, the Automation API and the inline program with its language host. */
  readonly reconciler: number;
  readonly apiServer: number;
  readonly etcd: number;
  /** kube-controller-manager, kube-scheduler and kwok: the Deployments' rollout, which both reconcilers cause alike. */
  readonly otherControlPlane: number;
}

interface Snapshot {
  readonly own: number;
  readonly children: number;
  readonly provider: number;
  /** Of it, the providers still running: kept alive per engine slot, and not yet in the reaped children's CPU. */
  readonly runningProvider: number;
  readonly controlPlane: ReadonlyMap<string, number>;
}

/** A control-plane component: its name (kube-apiserver, etcd, ...) and process id. */
export interface Component {
  readonly name: string;
  readonly pid: number;
}

function processCpuSeconds(pid: number): number {
  const fields = processStat(pid)?.fields;
  return fields ? (Number(fields[11]) + Number(fields[12])) / ticksPerSecond : 0;
}

/** Reads the CPU of one reconciler's tree (its sampler) and of the control plane at the start and end of a round. */
export class CpuMeter {
  private readonly sampler: TreeReadings;
  private readonly components: readonly Component[];

  constructor(sampler: TreeReadings, components: readonly Component[]) {
    this.sampler = sampler;
    this.components = components;
  }

  snapshot(): Snapshot {
    const tree = this.sampler.cpuSeconds() ?? { own: 0, children: 0 };
    return {
      ...tree,
      provider: this.sampler.cpuByCommand().get(providerCommand) ?? 0,
      runningProvider: this.sampler.cpuByCommand("running").get(providerCommand) ?? 0,
      controlPlane: new Map(this.components.map((c) => [c.name, processCpuSeconds(c.pid)])),
    };
  }

  since(before: Snapshot): CpuSplit {
    const now = this.snapshot();
    const component = (name: string) => (now.controlPlane.get(name) ?? 0) - (before.controlPlane.get(name) ?? 0);
    const provider = now.provider - before.provider;
    // The reaped children's CPU holds the providers that ended (an engine's own plugin, a kept one
    // replaced), not those still running (kept alive per engine slot, provider-slots.ts).
    const reapedProvider = provider - (now.runningProvider - before.runningProvider);
    const others = this.components.map((c) => c.name).filter((name) => name !== "kube-apiserver" && name !== "etcd");
    return {
      // The reaped children's CPU is exact; the plugins' part of it is sampled (see cpuByCommand).
      engine: Math.max(0, now.children - before.children - reapedProvider),
      provider,
      reconciler: now.own - before.own,
      apiServer: component("kube-apiserver"),
      etcd: component("etcd"),
      otherControlPlane: others.reduce((sum, name) => sum + component(name), 0),
    };
  }
}

export function totalCpu(split: CpuSplit): number {
  return split.engine + split.provider + split.reconciler + split.apiServer + split.etcd + split.otherControlPlane;
}

/** One column of the table: a round's CPU split, the objects it handled and its time to all Ready. */
export interface CpuColumn {
  readonly title: string;
  readonly split: CpuSplit;
  readonly n: number;
  readonly seconds: number;
}

/** CPU seconds per operation, by who spent them, for each column; and how busy that kept the machine's cores. */
export function cpuTable(columns: readonly CpuColumn[], cores: number): string {
  const per = (c: CpuColumn, pick: (s: CpuSplit) => number) => (pick(c.split) / c.n).toFixed(3);
  const row = (label: string, pick: (s: CpuSplit) => number) => `| ${label} | ${columns.map((c) => per(c, pick)).join(" | ")} |`;
  return [
    `| CPU seconds per object | ${columns.map((c) => c.title).join(" | ")} |`,
    `|---|${columns.map(() => "---|").join("")}`,
    row("Pulumi CLI (engine)", (s) => s.engine),
    row("Kubernetes provider plugin", (s) => s.provider),
    row("reconciler process (appstack: controller, Automation API, inline program and its language host)", (s) => s.reconciler),
    row("kube-apiserver", (s) => s.apiServer),
    row("etcd", (s) => s.etcd),
    row("kube-controller-manager, kube-scheduler, kwok", (s) => s.otherControlPlane),
    row("all", totalCpu),
    `| share of the ${cores} cores busy with these during the round | ${columns.map((c) => `${((100 * totalCpu(c.split)) / (cores * c.seconds)).toFixed(0)}%`).join(" | ")} |`,
  ].join("\n");
}
