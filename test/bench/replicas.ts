// appstack in the scale round: one operator process, or several replicas sharded on one PostgreSQL
// backend (docs/sharding.md), each a process with its own state folder, metrics port and sampled
// process tree. One replica runs without leader election, as the bench always ran it; several
// need it (the leader assigns the objects).
import { type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { counterTotal, metricValue } from "../helpers/operator.ts";
import { ProcessTreeSampler, SamplerGroup } from "../helpers/proctree.ts";
import { node, scrape, untilReady } from "./rounds.ts";

export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

export interface ReplicaSettings {
  readonly count: number;
  /** The settings every replica shares: kubeconfig, passphrase, concurrency, namespaces... */
  readonly env: Record<string, string>;
  /** Each replica's state folder is a folder below it, named after the replica. */
  readonly stateRoot: string;
  /** The shared `postgres://` backend; without it (one replica only) each keeps a file backend in its state folder. */
  readonly backendUrl?: string | undefined;
  /** A metrics port per replica, kept across a restart. */
  readonly ports: readonly number[];
}

export interface Replica {
  /** replica-a, replica-b...: its POD_NAME when sharded. */
  readonly name: string;
  readonly port: number;
  readonly stateDir: string;
  readonly child: ChildProcess;
  readonly sampler: ProcessTreeSampler;
}

export interface ReplicaReading {
  readonly rssKiB: number;
  readonly pssKiB: number;
  /** CPU seconds: the process's own, and its reaped children's (its engines and their plugins). */
  readonly cpu: { readonly own: number; readonly children: number };
}

const deadlineMs = 30 * 60_000;

export class Replicas {
  readonly settings: ReplicaSettings;
  readonly members: readonly Replica[];
  /** Every replica's tree read as one: what a round measures. */
  readonly group: SamplerGroup;

  /** Starts the replicas' processes and their samplers; `untilReady` waits for them. */
  constructor(settings: ReplicaSettings) {
    if (settings.count > 1 && !settings.backendUrl) throw new Error("several replicas need a shared backend");
    this.settings = settings;
    this.members = settings.ports.slice(0, settings.count).map((port, i) => this.spawn(`replica-${String.fromCharCode(97 + i)}`, port));
    this.group = new SamplerGroup(this.members.map((replica) => replica.sampler));
  }

  get sharded(): boolean {
    return this.settings.count > 1;
  }

  get ports(): number[] {
    return this.members.map((replica) => replica.port);
  }

  private spawn(name: string, port: number): Replica {
    const stateDir = join(this.settings.stateRoot, name);
    mkdirSync(stateDir, { recursive: true });
    const backend: Record<string, string> = this.settings.backendUrl ? { APPSTACK_BACKEND_URL: this.settings.backendUrl } : {};
    const election: Record<string, string> = this.sharded ? { APPSTACK_SHARDING: "true", POD_NAME: name } : { APPSTACK_LEADER_ELECT: "false" };
    const child = node("operator/cmd/main.ts", { ...this.settings.env, ...backend, ...election, APPSTACK_STATE_DIR: stateDir, APPSTACK_HEALTH_ADDR: `127.0.0.1:${port}` });
    const sampler = new ProcessTreeSampler(child.pid!);
    sampler.start();
    return { name, port, stateDir, child, sampler };
  }

  /** Until every replica is ready; sharded, until each holds its shard Lease and the leader counts them all, so that no object is first assigned to a ring of fewer. */
  async untilReady(): Promise<void> {
    await Promise.all(this.ports.map(untilReady));
    if (!this.sharded) return;
    for (const deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(250)) {
      const bodies = await Promise.all(this.ports.map(scrape));
      const leases = bodies.filter((body) => metricValue(body, "appstack_shard_lease") === 1).length;
      const leader = bodies.find((body) => metricValue(body, "appstack_leader") === 1);
      if (leases === this.settings.count && leader && metricValue(leader, "appstack_shard_members") === this.settings.count) return;
    }
    throw new Error(`the ${this.settings.count} replicas did not all hold their shard leases, seen by a leader, within 120 s`);
  }

  /** Each replica's share: the objects its caches hold (appstack_shard_objects in its metrics, `bodies`); unsharded, every object. */
  private sharesIn(bodies: readonly string[], objects: number): number[] {
    return this.sharded ? bodies.map((body) => metricValue(body, "appstack_shard_objects") ?? 0) : [objects];
  }

  async shares(objects: number): Promise<number[]> {
    return this.sharesIn(await Promise.all(this.ports.map(scrape)), objects);
  }

  /** Each replica now: its process's RSS, its tree's PSS (as last sampled) and its CPU seconds so far. */
  readings(): ReplicaReading[] {
    return this.members.map(({ sampler }) => ({ rssKiB: sampler.rootKiB, pssKiB: sampler.treePssKiB, cpu: sampler.cpuSeconds() ?? { own: 0, children: 0 } }));
  }

  /** Until just-started replicas have reconciled every one of `objects` once (each its share, all of them assigned) and have nothing queued or running. */
  async untilFirstPass(objects: number): Promise<void> {
    await this.untilReady();
    for (const deadline = Date.now() + deadlineMs; Date.now() < deadline; await sleep(250)) {
      const bodies = await Promise.all(this.ports.map(scrape));
      const idle = bodies.every((body) => metricValue(body, "appstack_queue_depth") === 0 && metricValue(body, "appstack_queue_active") === 0);
      const held = this.sharesIn(bodies, objects).reduce((sum, share) => sum + share, 0);
      if (idle && held === objects && counterTotal(bodies.join("\n"), "appstack_reconcile_total") >= objects) return;
    }
    throw new Error(`the restarted replicas had not reconciled ${objects} objects within ${deadlineMs / 60_000} minutes`);
  }

  /** Stops every replica (SIGTERM: each finishes its operations and releases its leases) and its sampler. */
  async stop(): Promise<void> {
    for (const replica of this.members) replica.sampler.stop();
    await Promise.all(this.members.map((replica) => stopProcess(replica.child)));
  }

  /** The same replicas started again: new processes on the same state folders, ports and backend. */
  again(): Replicas {
    return new Replicas(this.settings);
  }
}
