// The operator as one unit: watch, queue, reconcile. Started by main.ts; stopped on a signal.
import { join } from "node:path";
import { engineFolders, type OperatorConfig } from "./config.ts";
import { redactUrl } from "../base/redact.ts";
import { BindingGuard } from "../controller/binding-guard.ts";
import { EventRecorder } from "../controller/events.ts";
import { briefError, kubeClients, parseKey, type KubeClients } from "../kube/clients.ts";
import { fenceWrites } from "../kube/write-fence.ts";
import { impersonatingKubeconfig, operatorConnection } from "../kube/engine-kubeconfig.ts";
import type { IdentitySettings } from "../pulumi/identities.ts";
import { installPodCheck, type PodApi } from "../kube/peer-pods.ts";
import type { HolderCheck } from "../base/lock-holders.ts";
import type { Logger } from "../base/log.ts";
import type { OperatorMetrics } from "./metrics.ts";
import type { EngineBinaries } from "../pulumi/engine.ts";
import { PlanStore } from "../pulumi/plans.ts";
import { stateStore } from "../pulumi/state-store.ts";
import { WorkQueue } from "../controller/queue.ts";
import { Reconciler } from "../controller/reconcile.ts";
import { ShardFence } from "../controller/shard-fence.ts";
import { prepareWorkDir } from "../pulumi/stack-selection.ts";
import { StackDriver } from "../pulumi/stacks.ts";
import { StateIo } from "../pulumi/state-io.ts";
import { Watcher } from "../controller/watch.ts";

export interface RunningOperator {
  readonly clients: KubeClients;
  readonly queue: WorkQueue;
  readonly watcher: Watcher;
  /** Stops taking work, lets running operations finish, stops the watches. */
  stop(): Promise<void>;
  /** Kills the running operations (their stacks unlocked): nothing of this replica runs afterwards. */
  abort(): Promise<void>;
}

/** A sharded replica's part (docs/sharding.md): its member name, whether it holds its shard Lease now, and what to tell of a drain. */
export interface ShardMembership {
  readonly member: string;
  readonly holdsLease: () => boolean;
  /** How long the shard Lease is held from now unless renewed: a write in flight then is aborted. */
  readonly leaseRemainingMs?: () => number;
  readonly onDrained?: () => void;
}

/** A sharded replica's writes: none sent once it no longer holds its shard Lease, none left in flight once its time is up (write-fence.ts). */
function fenceShardWrites(clients: KubeClients, shard: ShardMembership): void {
  const fenced = () => (shard.holdsLease() ? undefined : "this replica no longer holds its shard lease");
  fenceWrites(clients.config, shard.leaseRemainingMs ? { fenced, remainingMs: shard.leaseRemainingMs } : { fenced });
}

/**
 * How a lock of another host is judged: by this install's pods, in this replica's own pod's
 * namespace (not the Lease's, which may be another; peer-pods.ts). Outside a pod (the local run),
 * or without leader election, nothing proves another host's holder gone.
 */
export function otherHostCheck(config: OperatorConfig, api: PodApi): { otherHost?: HolderCheck } {
  if (!config.leaderElection || !config.podName || !config.podNamespace) return {};
  return { otherHost: installPodCheck(api, { name: config.podName, namespace: config.podNamespace }) };
}

/**
 * Tenant identities (controller/tenancy.ts), when the configuration turns them on: the engines'
 * kubeconfigs act as each object's ServiceAccount with the operator's credentials by reference,
 * so an operator whose kubeconfig embeds them is refused here, at start.
 */
export function engineIdentities(config: OperatorConfig): IdentitySettings | undefined {
  if (!config.defaultServiceAccount) return undefined;
  const connection = operatorConnection(config.kubeconfig);
  return { folder: join(config.stateDir, "identities"), kubeconfigAs: (user) => impersonatingKubeconfig(connection, user) };
}

/**
 * `signal` gives up the start (a SIGTERM while the caches sync): it then rejects, with nothing left running.
 * `shard`: sharded, this replica watches and reconciles only the objects labelled for it.
 */
export async function startOperator(config: OperatorConfig, binaries: EngineBinaries, log: Logger, metrics?: OperatorMetrics, signal?: AbortSignal, shard?: ShardMembership): Promise<RunningOperator> {
  const clients = kubeClients(config.kubeconfig);
  const identities = engineIdentities(config);
  // Sharded, no write of this replica's reaches the API server once it no longer holds its shard
  // lease by its own clock: one resumed after a freeze exits without writing (docs/sharding.md).
  if (shard) fenceShardWrites(clients, shard);
  const { pulumiHome, workDir } = engineFolders(config.stateDir);
  // Leading already: a state folder that does not answer must not stop the lease's renewal.
  const io = new StateIo(config.operationTimeoutMs);
  const driver = new StackDriver(
    {
      backendUrl: config.backendUrl,
      passphrase: config.passphrase,
      pulumiHome,
      binaries,
      workDir: await prepareWorkDir(workDir, io),
      operationTimeoutMs: config.operationTimeoutMs,
      historyLimit: config.historyLimit,
      ...otherHostCheck(config, clients),
      ...(config.kubeconfig ? { kubeconfig: config.kubeconfig } : {}),
      ...(identities ? { identities } : {}),
      ...(config.attachedProviders ? { providerSlots: config.concurrency } : {}),
      // No Pulumi process starts once the shard lease is not held: a replica frozen past it writes nothing.
      ...(shard ? { mayOperate: shard.holdsLease } : {}),
    },
    log,
    metrics?.operationObserver,
  );
  // The queue runs keys only once every cache is synced (a key run earlier would find its object
  // missing from a cache still listing and take it for deleted), and every part exists.
  // Per object, the series of an object no longer in this replica's caches (deleted, moved) go.
  const present = (key: string) => {
    const { kind, namespace, name } = parseKey(key);
    return watcher.workload(kind, namespace, name) !== undefined;
  };
  const handle = (key: string) => (metrics ? metrics.reconcile(key, () => reconciler.reconcile(key), () => present(key)) : reconciler.reconcile(key));
  const queue: WorkQueue = new WorkQueue(handle, {
    concurrency: config.concurrency,
    baseDelayMs: config.baseRetryMs,
    maxDelayMs: config.maxRetryMs,
    paused: true,
  });
  const watcher = new Watcher(clients, config.namespaces, queue, log, config.watchTimeoutMs, shard?.member);
  // In the stack backend, which every replica reads (a cloud bucket's aside, which the operator
  // does not read itself): a plan outlives a restart and a move wherever the state does.
  const plans = new PlanStore(join(config.stateDir, "plans"), io, stateStore(config.backendUrl, io));
  const bindingGuard = new BindingGuard(clients, config.rbacBinding, log);
  const reconciler = new Reconciler({ clients, driver, plans, watcher, events: new EventRecorder(clients, log), log, backoff: (key) => queue.peekBackoff(key), bindingGuard, podStartTimeoutMs: config.podStartTimeoutMs, proxySyncMs: config.proxySyncMs,
    excludedNamespaces: new Set(config.excludedNamespaces),
    ...(config.defaultServiceAccount ? { tenancy: { defaultServiceAccount: config.defaultServiceAccount } } : {}),
    ...(shard ? { shard: new ShardFence({ clients, member: shard.member, holdsLease: shard.holdsLease, log, ...(shard.onDrained ? { onDrained: shard.onDrained } : {}) }) } : {}) });
  // Leading from here: whatever a killed predecessor left locked or running is stale.
  await driver.cleanUpAfterPredecessor();
  // Both before the queue runs anything: the warm-up may make the template new stacks use.
  const warmUp = driver.warmUp();
  try {
    await watcher.start(config.cacheSyncTimeoutMs, signal);
  } catch (error) {
    // Given up (the caches did not sync in time, or a signal came first): nothing of this replica
    // may go on once it hands the lease over, neither a watch nor an engine.
    await watcher.stop();
    await driver.killAll();
    await warmUp;
    throw error;
  }
  await warmUp;
  // A predecessor killed between an object's last finalizer and its namespace's binding left the binding held.
  if (config.namespaces !== "all") {
    for (const namespace of config.namespaces) {
      await bindingGuard.releaseIfUnused(namespace).catch((error: unknown) => log.warn("could not tell whether the RBAC binding may go", { namespace, error: briefError(error) }));
    }
  }
  queue.start();
  // The queue coalesces (an object still queued or running is not checked twice) and leaves
  // failing objects to their backoff.
  const resync = setInterval(() => {
    metrics?.resyncs.inc();
    queue.resync(watcher.keys());
  }, config.resyncMs);
  resync.unref();
  log.info("watching", { namespaces: config.namespaces, concurrency: config.concurrency, backend: redactUrl(config.backendUrl), resyncSeconds: config.resyncMs / 1000, ...(config.defaultServiceAccount ? { tenantIdentities: `as each object's ServiceAccount, by default ${config.defaultServiceAccount}` } : {}) });
  return {
    clients,
    queue,
    watcher,
    async stop() {
      clearInterval(resync);
      await queue.shutdown();
      driver.close();
      await watcher.stop();
    },
    async abort() {
      clearInterval(resync);
      const stopped = queue.shutdown();
      await driver.killAll();
      await stopped;
      await watcher.stop();
    },
  };
}
