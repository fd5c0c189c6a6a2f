// The operator as a service: health and metrics endpoints, leader election, and the reconciling
// operator once this replica leads; graceful shutdown lets running operations finish, within a
// deadline, before the lease is handed over.
import type { Server } from "node:http";
import { hostname } from "node:os";
import type { MetricsServing, OperatorConfig } from "./config.ts";
import { timedOut, withinDeadline } from "../base/deadline.ts";
import { redactUrl } from "../base/redact.ts";
import { startHealthServer } from "./health.ts";
import { briefError, kubeClients } from "../kube/clients.ts";
import { defaultLeaseTiming, LeaderElector, leaseApi } from "./leader.ts";
import type { Logger } from "../base/log.ts";
import { OperatorMetrics } from "./metrics.ts";
import { stalledObjects } from "./stalled-objects.ts";
import { MetricsAuthorizer } from "./metrics-auth.ts";
import { apiServerReviews } from "./metrics-reviews.ts";
import { startMetricsServer } from "./metrics-server.ts";
import { startOperator, type RunningOperator } from "./operator.ts";
import { runShardedReplica } from "./sharded-replica.ts";
import type { EngineBinaries } from "../pulumi/engine.ts";
import { backendTlsWarnings } from "../pulumi/postgres-tls.ts";
import { breakLocksOfEarlierContainers } from "../pulumi/stack-locks.ts";
import { StateIo } from "../pulumi/state-io.ts";
import { projectName } from "../pulumi/stack-names.ts";

export interface OperatorService {
  /** /healthz and /readyz (and /metrics, on a loopback address without APPSTACK_METRICS_ADDR). */
  readonly server: Server;
  /** /metrics on a server of its own, with APPSTACK_METRICS_ADDR. */
  readonly metricsServer?: Server;
  stop(): Promise<void>;
}

/** A replica once started: its operator while it reconciles, whether it is ready, and its stop. */
export interface Replica {
  readonly operator: () => RunningOperator | undefined;
  ready(): boolean;
  stop(): Promise<void>;
}

/** What the service runs once /healthz answers; a test puts stand-ins in. */
export interface StartUpSteps {
  /** Runs before any engine of this container: it waits on the backend (a database may be slow). */
  readonly sweep: (config: OperatorConfig, log: Logger) => Promise<unknown>;
  /** Contends for the lease (sharded: the leases) and reconciles once it may. */
  readonly run: (config: OperatorConfig, binaries: EngineBinaries, log: Logger, metrics: OperatorMetrics) => Replica;
}

/** A lock naming this pod's name, found before this container runs any engine, is a predecessor's: its holder is gone. */
async function sweepEarlierContainers(config: OperatorConfig, log: Logger): Promise<void> {
  // Only where the hostname is the pod's name (unique among live pods).
  if (config.podName === hostname()) await breakLocksOfEarlierContainers(config.backendUrl, projectName, log, new StateIo(config.operationTimeoutMs));
}

/**
 * `binaries`: the engine's, from the wiring (operator/cmd/), which knows the toolchain. Resolves once
 * the health server listens; the start-up steps go on behind it.
 */
export async function startService(config: OperatorConfig, binaries: EngineBinaries, log: Logger, steps: Partial<StartUpSteps> = {}): Promise<OperatorService> {
  const { sweep = sweepEarlierContainers, run = config.sharding ? runShardedReplica : runReplica } = steps;
  // The replica's operator is made after the metrics, which read it.
  const started: { replica?: Replica } = {};
  const running = () => started.replica?.operator();
  const metrics = new OperatorMetrics(() => ({ depth: running()?.queue.depth ?? 0, active: running()?.queue.active ?? 0 }), () => running()?.watcher.namespaceStates() ?? new Map(), {
    objectMetrics: config.objectMetrics,
    stalled: () => {
      const watcher = running()?.watcher;
      return watcher ? stalledObjects(watcher) : [];
    },
  });
  // Liveness first: a start-up step that waits on the network (the sweep, on a slow database) must
  // not let the kubelet kill the pod, which would then never get past it. Ready only once started.
  // A state database whose certificate is not verified works: said at start and in /readyz, which it keeps ready.
  const warnings = backendTlsWarnings(config.backendUrl);
  for (const warning of warnings) log.warn(warning, { backend: redactUrl(config.backendUrl) });
  const server = await startHealthServer(config.healthPort, config.healthHost, { healthy: () => true, ready: () => started.replica?.ready() ?? false, warnings }, config.metrics ? undefined : metrics.registry);
  log.info(`serving /healthz, /readyz${config.metrics ? "" : " and /metrics"}${config.sharding ? " (sharded)" : ""}`, { address: addressOf(server) });
  const metricsServer = config.metrics && (await serveMetricsAlone(config, config.metrics, metrics, log));

  let stopping = false;
  const startUp = async () => {
    try {
      await sweep(config, log);
    } catch (error) {
      // As a start that fails once leading: exit, and start afresh.
      log.error("could not break the stack locks of this pod's earlier containers; exiting", { error: briefError(error) });
      process.exit(1);
    }
    if (!stopping) started.replica = run(config, binaries, log, metrics);
  };
  const startingUp = startUp();

  return {
    server,
    async stop() {
      stopping = true;
      // A sweep under way ends within its deadline (StateIo); no replica starts after it.
      await startingUp;
      await started.replica?.stop();
      await Promise.all([server, ...(metricsServer ? [metricsServer] : [])].map((open) => new Promise((resolve) => open.close(resolve))));
    },
  };
}

/** /metrics on its own address: HTTPS, each request reviewed by the API server, unless config.ts allowed plain HTTP on loopback. */
async function serveMetricsAlone(config: OperatorConfig, serving: MetricsServing, metrics: OperatorMetrics, log: Logger): Promise<Server> {
  const authorizer = serving.secure ? new MetricsAuthorizer(apiServerReviews(kubeClients(config.kubeconfig).config)) : undefined;
  const server = await startMetricsServer(serving, metrics.registry, log, authorizer);
  const how = !serving.secure ? "in plain HTTP, on loopback" : `over HTTPS to users allowed to get it (${serving.certDir ? "the certificate of the folder" : "a self-signed certificate"})`;
  log.info(`serving /metrics ${how}`, { address: addressOf(server), ...(serving.certDir ? { certDir: serving.certDir } : {}) });
  return server;
}

function addressOf(server: Server): string {
  const address = server.address();
  return typeof address === "object" && address ? `${address.address}:${address.port}` : String(address);
}

/** Not sharded: one replica leads (with leader election) and reconciles every object; the others stand by. */
function runReplica(config: OperatorConfig, binaries: EngineBinaries, log: Logger, metrics: OperatorMetrics): Replica {
  let operator: RunningOperator | undefined;
  const lease = config.leaderElection ? { ...config.leaderElection, ...defaultLeaseTiming } : undefined;
  const elector = lease ? new LeaderElector(leaseApi(kubeClients(config.kubeconfig).config, lease), lease, log, undefined, (result) => metrics.leaseCalls.inc({ result })) : undefined;

  // A stop while the operator starts ends the start (its cache sync may take until its deadline).
  const starting = new AbortController();
  const lead = async () => {
    if (elector) {
      await elector.acquire();
      metrics.leader.set(1);
      void elector.keepRenewing(() => {
        metrics.leader.set(0);
        // As controller-runtime does: a replica that lost the lease exits and starts afresh. Its
        // engines go first: the renew deadline ends before the lease can expire for a standby.
        log.error("lost leadership; stopping every operation and exiting so that another replica takes over");
        void withinDeadline(operator?.abort() ?? Promise.resolve(), 3_000).finally(() => process.exit(1));
      });
    }
    try {
      operator = await startOperator(config, binaries, log, metrics, starting.signal);
    } catch (error) {
      if (starting.signal.aborted) return log.info("stopped while starting; releasing the lease");
      // Holding the lease while reconciling nothing would stop every replica: hand it over and
      // exit, so that another replica (or this one, restarted) takes over.
      log.error("the operator could not start; releasing the lease and exiting", { error: briefError(error) });
      await elector?.release();
      process.exit(1);
    }
  };
  // acquire() ends only when the service is stopped first (it retries every other failure).
  const leading = lead().catch((error: unknown) => log.info("stopped before leading", { error: briefError(error) }));

  return {
    operator: () => operator,
    // A standby is ready too while it knows who leads and is waiting to take over; not while the
    // lease API fails it.
    ready: () => operator !== undefined || (elector?.state === "following" && elector.holder !== undefined && elector.lastError === undefined),
    async stop() {
      starting.abort();
      // A standby stops contending; a leader goes on renewing its lease until every engine of it is
      // gone and the last status is written, and hands it over only then: a lease left to expire
      // meanwhile (15 s, against a grace of 60) would let a standby lead beside this replica's
      // engines. Losing the lease meanwhile still kills them and exits (keepRenewing's onLost).
      elector?.stopContending();
      await leading.catch(() => undefined);
      if (operator && (await withinDeadline(operator.stop(), config.shutdownGraceMs)) === timedOut) {
        // The lease goes only after every engine of this replica is gone: two engines must never write one stack.
        log.warn("shutdown grace passed with operations still running; killing them before the lease is handed over", { graceMs: config.shutdownGraceMs });
        await operator.abort();
      }
      await elector?.release();
      metrics.leader.set(0);
    },
  };
}
