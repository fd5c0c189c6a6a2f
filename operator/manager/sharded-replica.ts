// A replica of a sharded operator (docs/sharding.md): it holds a shard Lease of its own and
// reconciles the objects labelled for it from the start; the one that also wins the leader Lease
// runs the sharder, which assigns the objects to the live replicas. A replica that loses either
// lease stops every operation and exits, as a leader that loses its lease does. On shutdown it
// finishes (or, past the grace, kills) its operations, then releases its shard Lease so that the
// sharder moves its objects at once rather than after the lease expires.
import { timedOut, withinDeadline } from "../base/deadline.ts";
import type { Logger } from "../base/log.ts";
import { memberName, shardRingLabel } from "../controller/shard-labels.ts";
import { briefError, kubeClients } from "../kube/clients.ts";
import type { EngineBinaries } from "../pulumi/engine.ts";
import type { OperatorConfig } from "./config.ts";
import { defaultLeaseTiming, LeaderElector, leaseApi } from "./leader.ts";
import type { OperatorMetrics } from "./metrics.ts";
import { startOperator, type RunningOperator } from "./operator.ts";
import { Sharder } from "./sharder.ts";
import { ShardMetrics } from "./shard-metrics.ts";

/** How often the sharder looks for objects to assign or move: a new object waits up to this long for its owner. */
export const sharderPeriodMs = 1_000;

export interface ShardedReplica {
  readonly operator: () => RunningOperator | undefined;
  ready(): boolean;
  stop(): Promise<void>;
}

export function runShardedReplica(config: OperatorConfig, binaries: EngineBinaries, log: Logger, metrics: OperatorMetrics): ShardedReplica {
  const election = config.leaderElection;
  if (!election) throw new Error("sharding needs leader election");
  const member = memberName(election.identity);
  const clients = kubeClients(config.kubeconfig);
  const api = leaseApi(clients.config, defaultLeaseTiming);
  // Both leases are given up when they lapse while the process is frozen: others act on a lapsed one.
  const timing = { ...defaultLeaseTiming, giveUpWhenLapsed: true };
  const shardLease = new LeaderElector(api, { ...election, ...timing, name: `${election.name}-shard-${member}`, labels: { [shardRingLabel]: election.name } }, log.with({ lease: "shard" }));
  const leader = new LeaderElector(api, { ...election, ...timing }, log, undefined, (result) => metrics.leaseCalls.inc({ result }));
  let operator: RunningOperator | undefined;
  let sharder: Sharder | undefined;
  const shardMetrics = new ShardMetrics(metrics.registry, () => operator?.watcher.keys().length ?? 0);
  const starting = new AbortController();

  // Nothing of this replica may run once another may act on its objects: its engines go first.
  const stopAndExit = (why: string) => {
    log.error(why);
    void withinDeadline(operator?.abort() ?? Promise.resolve(), 3_000).finally(() => process.exit(1));
  };

  const reconcile = async () => {
    await shardLease.acquire();
    shardMetrics.lease.set(1);
    log.info("holding the shard lease; reconciling the objects labelled for this replica", { member });
    void shardLease.keepRenewing(() => {
      shardMetrics.lease.set(0);
      stopAndExit("lost the shard lease; stopping every operation and exiting: the sharder gives its objects to other replicas");
    });
    try {
      operator = await startOperator(config, binaries, log, metrics, starting.signal, { member, holdsLease: () => shardLease.holdsNow(), leaseRemainingMs: () => shardLease.remainingMs(), onDrained: () => shardMetrics.drains.inc() });
    } catch (error) {
      if (starting.signal.aborted) return log.info("stopped while starting; releasing the shard lease");
      log.error("the operator could not start; releasing the shard lease and exiting", { error: briefError(error) });
      await shardLease.release();
      process.exit(1);
    }
  };
  const lead = async () => {
    await leader.acquire();
    metrics.leader.set(1);
    void leader.keepRenewing(() => {
      metrics.leader.set(0);
      stopAndExit("lost leadership; stopping every operation and exiting so that another replica runs the sharder");
    });
    sharder = new Sharder({ clients, namespaces: config.namespaces, leaseNamespace: election.namespace, ring: election.name, periodMs: sharderPeriodMs, watchTimeoutMs: config.watchTimeoutMs, leading: () => leader.holdsNow(), log: log.with({ component: "sharder" }), metrics: shardMetrics });
    sharder.start();
  };
  // acquire() ends only when the service is stopped first (it retries every other failure).
  const reconciling = reconcile().catch((error: unknown) => log.info("stopped before holding the shard lease", { error: briefError(error) }));
  const leading = lead().catch((error: unknown) => log.info("stopped before leading", { error: briefError(error) }));

  return {
    operator: () => operator,
    ready: () => operator !== undefined,
    async stop() {
      starting.abort();
      shardLease.stopContending();
      leader.stopContending();
      await Promise.all([reconciling, leading]);
      if (operator && (await withinDeadline(operator.stop(), config.shutdownGraceMs)) === timedOut) {
        log.warn("shutdown grace passed with operations still running; killing them before the shard lease is released", { graceMs: config.shutdownGraceMs });
        await operator.abort();
      }
      await sharder?.stop();
      // Released, the lease says at once that this replica is gone: its objects move without waiting for it to expire.
      await shardLease.release();
      shardMetrics.lease.set(0);
      await leader.release();
      metrics.leader.set(0);
    },
  };
}
