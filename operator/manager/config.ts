// Operator settings, from the environment (as a Deployment sets them) with flags on top.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir, hostname } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { ParseArgsOptionsConfig } from "node:util";
import type { Level } from "../base/log.ts";
import { keepSecretsOf } from "../base/redact.ts";
import { sharedBackendRefusal } from "../base/shared-backend.ts";
import { defaultHistoryLimit } from "../pulumi/history-retention.ts";
import { defaultPodStartTimeoutMs } from "../controller/status.ts";
import { defaultProxySyncMs } from "../controller/service-endpoints.ts";
import { usableCpus } from "./cpu-quota.ts";

export interface OperatorConfig {
  readonly kubeconfig?: string;
  /** Namespaces to watch; "all" for the whole cluster. */
  readonly namespaces: readonly string[] | "all";
  /**
   * Namespaces the operator never acts in, watching all (controller/excluded-namespaces.ts):
   * kube-system and its own pod's namespace unless set; empty when namespaces are listed.
   */
  readonly excludedNamespaces: readonly string[];
  /** Objects reconciled at once (each runs its own Pulumi engine). */
  readonly concurrency: number;
  readonly stateDir: string;
  readonly backendUrl: string;
  readonly passphrase: string;
  readonly logLevel: Level;
  readonly logFormat: "json" | "text";
  readonly baseRetryMs: number;
  readonly maxRetryMs: number;
  /** Where /healthz and /readyz listen, in plain HTTP for the kubelet; /metrics too when `metrics` is undefined (a loopback address only). */
  readonly healthHost: string;
  readonly healthPort: number;
  /** /metrics on a server of its own (APPSTACK_METRICS_ADDR); undefined: beside /healthz. */
  readonly metrics?: MetricsServing;
  /** The Lease that elects one reconciling replica; undefined runs without election. */
  readonly leaderElection?: { readonly namespace: string; readonly name: string; readonly identity: string };
  /**
   * Every replica reconciles a share of the objects (docs/sharding.md): each holds a shard Lease,
   * the leader assigns objects to live replicas by consistent hashing. Needs leader election.
   */
  readonly sharding: boolean;
  /** The operator's RoleBinding in each watched namespace (APPSTACK_RBAC_BINDING, set by a namespace-scoped install): kept while objects there have finalizers. */
  readonly rbacBinding?: string;
  /** The pod this replica runs in (POD_NAME, from the downward API); undefined outside one. */
  readonly podName?: string;
  /** That pod's namespace (POD_NAMESPACE, else the service account's namespace file): where the replicas' pods are, whatever the Lease's namespace. */
  readonly podNamespace?: string;
  /** How long a SIGTERM waits for running Pulumi operations before the process exits anyway. */
  readonly shutdownGraceMs: number;
  /** How long one Pulumi operation may take before it is cancelled. */
  readonly operationTimeoutMs: number;
  /** Updates kept in each stack's history, for `appstack history` (older ones are pruned). */
  readonly historyLimit: number;
  /** How often every object is re-checked against its live children, events or not (controller-runtime's SyncPeriod). */
  readonly resyncMs: number;
  /** How long a pod may fail to start (image pull, crash loop, config error) before its object is Stalled. */
  readonly podStartTimeoutMs: number;
  /** How long Ready waits for service proxies to apply a change of a Service's EndpointSlices; 0: not at all. */
  readonly proxySyncMs: number;
  /** How long a new leader waits for every watch to list before it gives up the lease and exits (controller-runtime's CacheSyncTimeout). */
  readonly cacheSyncTimeoutMs: number;
  /** How long the API server keeps one watch open (its `timeoutSeconds`); a watch not ended soon after is taken for a dead connection. */
  readonly watchTimeoutMs: number;
  /** Metrics per object too, labelled {kind, namespace, name} (object-metrics.ts): series that grow with the objects, so off unless asked for. */
  readonly objectMetrics: boolean;
  /** Engines attach to a Kubernetes provider kept alive per engine slot (pulumi/provider-slots.ts) rather than each starting one. */
  readonly attachedProviders: boolean;
  /**
   * Tenant identities on (controller/tenancy.ts): the children of an object that names no
   * spec.serviceAccountName are written as this ServiceAccount of its namespace. Undefined: off,
   * the operator's own rights write them.
   */
  readonly defaultServiceAccount?: string;
}

/** Where and how /metrics is served on a server of its own. */
export interface MetricsServing {
  readonly host: string;
  readonly port: number;
  /** HTTPS, each request authenticated (TokenReview) and authorized (SubjectAccessReview); false only on a loopback address. */
  readonly secure: boolean;
  /** A folder with tls.crt and tls.key (a mounted kubernetes.io/tls Secret); undefined: a self-signed certificate made in memory. */
  readonly certDir?: string;
}

type Env = Record<string, string | undefined>;

/**
 * Objects reconciled at once unless configured: one more than the cores. An operation's engine
 * no longer keeps a core busy all the time it runs (with the provider kept per slot and the SDK's
 * hot path trimmed, about 60% of it: the rest is waiting on the API server and the engine's round
 * trips), so one per core left the cores a third idle: on 2 cores 100 new Apps took 32.0 s at 2
 * and 24.6 s at 3, with the tree's peak PSS 498 and 584 MiB (docs/measurements.md). The cores
 * are those the cgroup's CPU quota allows (a pod's CPU limit), not the node's.
 */
export function defaultConcurrency(cpus = usableCpus()): number {
  return cpus + 1;
}

/** The engine's own folders inside the state folder: its home (plugins, logs) and the stacks' workspace. */
export function engineFolders(stateDir: string): { pulumiHome: string; workDir: string } {
  return { pulumiHome: join(stateDir, "pulumi-home"), workDir: join(stateDir, "workspace") };
}

/** The operator's flags, each also an environment variable (see loadConfig); for node:util parseArgs. */
export const operatorOptions = {
  kubeconfig: { type: "string" },
  namespaces: { type: "string" },
  "excluded-namespaces": { type: "string" },
  concurrency: { type: "string" },
  "state-dir": { type: "string" },
  "backend-url": { type: "string" },
  "log-level": { type: "string" },
  "log-format": { type: "string" },
  "health-addr": { type: "string" },
  "metrics-addr": { type: "string" },
  "metrics-secure": { type: "string" },
  "leader-elect": { type: "string" },
  sharding: { type: "string" },
  "operation-timeout-seconds": { type: "string" },
  "resync-seconds": { type: "string" },
  "object-metrics": { type: "string" },
  "default-service-account": { type: "string" },
  // Read by the entry points before anything else (operator/cmd/kinds-option.ts): the kinds must be registered before they are read.
  kinds: { type: "string" },
} as const satisfies ParseArgsOptionsConfig;

export type OperatorFlags = { readonly [name in keyof typeof operatorOptions]?: string };

export const operatorFlagsUsage = `  --kubeconfig=PATH  --namespaces=a,b  --excluded-namespaces=a,b  --concurrency=N  --state-dir=DIR  --backend-url=URL
  --log-level=debug|info|warn|error  --log-format=json|text  --health-addr=HOST:PORT
  --metrics-addr=HOST:PORT  --metrics-secure=true|false
  --leader-elect=true|false  --sharding=true|false  --operation-timeout-seconds=N  --resync-seconds=N
  --object-metrics=true|false  --default-service-account=NAME  --kinds=DIR
  (each also an environment variable; see docs/configuration.md)`;

/** Whether loadConfig may create the state folder and a passphrase file (a preview must not). */
export interface LoadOptions {
  readonly readOnly?: boolean;
}

function nonNegativeInt(text: string | undefined, fallback: number, what: string): number {
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${what} must be a whole number, 0 or more, not ${JSON.stringify(text)}`);
  return value;
}

function positiveInt(text: string | undefined, fallback: number, what: string): number {
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${what} must be a positive integer, not ${JSON.stringify(text)}`);
  return value;
}

/**
 * The passphrase for stack secrets. A local file backend may keep a generated one beside its
 * state; any other backend must be given one, or its secrets could not be read after a restart.
 */
function passphrase(env: Env, stateDir: string, localBackend: boolean, readOnly: boolean): string {
  const given = (env["APPSTACK_PASSPHRASE"] ?? env["PULUMI_CONFIG_PASSPHRASE"]) || passphraseFromFile(env);
  if (given) return given;
  if (!localBackend) throw new Error("set APPSTACK_PASSPHRASE_FILE or APPSTACK_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE or PULUMI_CONFIG_PASSPHRASE) to encrypt stack secrets");
  const file = join(stateDir, "passphrase");
  // Read-only with no file: no operator has used this folder, so no stack needs the passphrase.
  if (readOnly && !existsSync(file)) return "";
  if (!existsSync(file)) writeFileSync(file, randomBytes(24).toString("base64url"), { mode: 0o600 });
  return readFileSync(file, "utf8").trim();
}

/**
 * The passphrase from the file a variable names; a variable with the passphrase itself wins (a
 * person's shell, `npm start`). APPSTACK_PASSPHRASE_FILE, where the install mounts its Secret so
 * that no variable of the pod holds it, is read byte for byte, a final newline included: that is
 * what the Secret's key gave the operator when the install passed it as a variable, and what its
 * stacks are encrypted with. PULUMI_CONFIG_PASSPHRASE_FILE is read as Pulumi reads it, with the
 * white space around it trimmed, so that stacks made by the Pulumi CLI with that file open.
 */
function passphraseFromFile(env: Env): string | undefined {
  const own = env["APPSTACK_PASSPHRASE_FILE"];
  const pulumis = env["PULUMI_CONFIG_PASSPHRASE_FILE"];
  const file = own || pulumis;
  if (!file) return undefined;
  try {
    const text = readFileSync(file, "utf8");
    return own ? text : text.trim();
  } catch (error) {
    throw new Error(`the passphrase file ${file} cannot be read: ${(error as Error).message}`, { cause: error });
  }
}

const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/** host:port; an empty host means all interfaces, as in Go's flag convention; an IPv6 host in brackets. */
function address(text: string, what: string): { host: string; port: number } {
  const match = /^(.*):(\d+)$/.exec(text);
  if (!match) throw new Error(`${what} must be host:port, not ${JSON.stringify(text)}`);
  return { host: (match[1] || "0.0.0.0").replace(/^\[(.*)\]$/, "$1"), port: Number(match[2]) };
}

/** Only this machine's processes (a pod's own containers) reach it. */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Where /healthz, /readyz and /metrics are served. Plain HTTP serves /metrics only on a loopback
 * address: anywhere else its series (namespaces, object names, errors) would be open to anyone
 * who reaches the port, so there it is HTTPS with each request authenticated and authorized.
 */
function endpoints(setting: Setting, env: Env): Pick<OperatorConfig, "healthHost" | "healthPort" | "metrics"> {
  const health = address(setting("health-addr", "APPSTACK_HEALTH_ADDR") ?? "127.0.0.1:8081", "the health address");
  const given = setting("metrics-addr", "APPSTACK_METRICS_ADDR");
  if (!given) {
    if (!isLoopback(health.host)) throw new Error(`/metrics is served beside /healthz in plain HTTP only on a loopback address, and the health address is ${health.host}:${health.port}: set APPSTACK_METRICS_ADDR (--metrics-addr) to serve it over HTTPS with authentication`);
    return { healthHost: health.host, healthPort: health.port };
  }
  const metrics = address(given, "the metrics address");
  const secure = boolean(setting("metrics-secure", "APPSTACK_METRICS_SECURE"), true, "metrics-secure");
  if (!secure && !isLoopback(metrics.host)) throw new Error(`plain HTTP (APPSTACK_METRICS_SECURE=false) serves /metrics only on a loopback address, not ${metrics.host}:${metrics.port}: anyone who reached it would read every series unauthenticated`);
  const certDir = env["APPSTACK_METRICS_CERT_DIR"] || undefined;
  return { healthHost: health.host, healthPort: health.port, metrics: { ...metrics, secure, ...(certDir && secure ? { certDir } : {}) } };
}

/** A setting's value: its flag if given, else its environment variable. */
type Setting = (name: keyof OperatorFlags, variable: string) => string | undefined;

/** The namespace of the pod this process runs in, as its service account's token mount says; undefined outside a pod. */
function serviceAccountNamespace(): string | undefined {
  return existsSync(serviceAccountNamespaceFile) ? readFileSync(serviceAccountNamespaceFile, "utf8").trim() : undefined;
}

/** The pod this replica runs in: POD_NAME, and POD_NAMESPACE or the service account's namespace. */
function ownPod(env: Env): Pick<OperatorConfig, "podName" | "podNamespace"> {
  const podName = env["POD_NAME"];
  if (!podName) return {};
  const podNamespace = env["POD_NAMESPACE"] ?? serviceAccountNamespace();
  return podNamespace ? { podName, podNamespace } : { podName };
}

function leaderElection(setting: Setting, env: Env): OperatorConfig["leaderElection"] {
  const enabled = (setting("leader-elect", "APPSTACK_LEADER_ELECT") ?? "true") !== "false";
  if (!enabled) return undefined;
  const inCluster = serviceAccountNamespace();
  return {
    namespace: env["APPSTACK_LEASE_NAMESPACE"] ?? inCluster ?? "default",
    name: env["APPSTACK_LEASE_NAME"] ?? "appstack-operator",
    identity: `${env["POD_NAME"] ?? hostname()}_${randomBytes(4).toString("hex")}`,
  };
}

/** Leader election, and sharding on top of it (which needs the leader to assign the objects). */
function elections(setting: Setting, env: Env): Pick<OperatorConfig, "leaderElection" | "sharding"> {
  const election = leaderElection(setting, env);
  const sharding = (setting("sharding", "APPSTACK_SHARDING") ?? "false") === "true";
  if (sharding && !election) throw new Error("sharding needs leader election: the leader assigns the objects to the replicas");
  return { leaderElection: election, sharding };
}

/**
 * Sharding only on a backend that replicas can share: PostgreSQL. Checked here, where every URL
 * ends up (a flag, the environment, an install's Secret the install program never sees), and not
 * only by the install: on file:// each replica would keep its stacks in a folder of its own, and
 * in an object store a killed replica's stack locks would never be broken.
 */
function shardable<T extends Pick<OperatorConfig, "sharding">>(election: T, givenBackend: string | undefined): T {
  if (!election.sharding) return election;
  const why = sharedBackendRefusal(givenBackend || "file://");
  if (why) throw new Error(`sharding (APPSTACK_SHARDING=true, --sharding) needs a PostgreSQL backend (APPSTACK_BACKEND_URL=postgres://...), ${why}`);
  return election;
}

/** Where stack state lives and how its secrets are encrypted. */
function storage(setting: Setting, env: Env, readOnly: boolean): Pick<OperatorConfig, "stateDir" | "backendUrl" | "passphrase"> {
  const stateDir = setting("state-dir", "APPSTACK_STATE_DIR") ?? join(env["XDG_STATE_HOME"] ?? join(homedir(), ".local", "state"), "appstack");
  if (!readOnly) mkdirSync(stateDir, { recursive: true });
  const givenBackend = setting("backend-url", "APPSTACK_BACKEND_URL");
  if (givenBackend) {
    // Its password never reaches a log line, an Event or a status, however an error quotes it.
    keepSecretsOf(givenBackend);
    return { stateDir, backendUrl: givenBackend, passphrase: passphrase(env, stateDir, false, readOnly) };
  }
  if (!readOnly) mkdirSync(join(stateDir, "backend"), { recursive: true });
  return { stateDir, backendUrl: pathToFileURL(join(stateDir, "backend")).href, passphrase: passphrase(env, stateDir, true, readOnly) };
}

function boolean(text: string | undefined, fallback: boolean, what: string): boolean {
  if (text === undefined || text === "") return fallback;
  if (text === "true" || text === "false") return text === "true";
  throw new Error(`${what} must be true or false, not ${JSON.stringify(text)}`);
}

/** A ServiceAccount's name: a DNS-1123 subdomain, as the CRDs' spec.serviceAccountName. */
function serviceAccountName(text: string | undefined): Pick<OperatorConfig, "defaultServiceAccount"> {
  if (text === undefined || text === "") return {};
  if (text.length > 253 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(text)) {
    throw new Error(`the default service account must be the name of a ServiceAccount (of each object's own namespace), not ${JSON.stringify(text)}`);
  }
  return { defaultServiceAccount: text };
}

function logLevel(text: string): Level {
  if (text === "debug" || text === "info" || text === "warn" || text === "error") return text;
  throw new Error(`unknown log level ${text}`);
}

function commaList(text: string | undefined): string[] {
  return (text ?? "").split(",").map((item) => item.trim()).filter(Boolean);
}

/**
 * Watching all namespaces: those the operator never acts in. Unset, kube-system and the operator's
 * own (its pod's; none outside a pod), whose ServiceAccounts are the cluster's most privileged; an
 * empty value excludes none.
 */
function excludedNamespaces(text: string | undefined, ownNamespace: string | undefined): string[] {
  if (text !== undefined) return commaList(text);
  return ["kube-system", ...(ownNamespace && ownNamespace !== "kube-system" ? [ownNamespace] : [])];
}

/** The settings from parsed flags (see operatorOptions) over the environment: a flag wins over its variable. */
export function loadConfig(flags: OperatorFlags, env: Env = process.env, { readOnly = false }: LoadOptions = {}): OperatorConfig {
  const setting: Setting = (name, variable) => flags[name] ?? env[variable];
  const namespaces = commaList(setting("namespaces", "APPSTACK_NAMESPACES"));
  return {
    kubeconfig: setting("kubeconfig", "KUBECONFIG"),
    namespaces: namespaces.length ? namespaces : "all",
    excludedNamespaces: namespaces.length ? [] : excludedNamespaces(setting("excluded-namespaces", "APPSTACK_EXCLUDED_NAMESPACES"), ownPod(env).podNamespace),
    concurrency: positiveInt(setting("concurrency", "APPSTACK_CONCURRENCY"), defaultConcurrency(), "concurrency"),
    ...storage(setting, env, readOnly),
    logLevel: logLevel(setting("log-level", "APPSTACK_LOG_LEVEL") ?? "info"),
    logFormat: setting("log-format", "APPSTACK_LOG_FORMAT") === "text" ? "text" : "json",
    baseRetryMs: positiveInt(env["APPSTACK_RETRY_BASE_MS"], 2_000, "APPSTACK_RETRY_BASE_MS"),
    maxRetryMs: positiveInt(env["APPSTACK_RETRY_MAX_MS"], 300_000, "APPSTACK_RETRY_MAX_MS"),
    ...endpoints(setting, env),
    ...shardable(elections(setting, env), setting("backend-url", "APPSTACK_BACKEND_URL")),
    ...ownPod(env),
    ...(env["APPSTACK_RBAC_BINDING"] ? { rbacBinding: env["APPSTACK_RBAC_BINDING"] } : {}),
    shutdownGraceMs: positiveInt(env["APPSTACK_SHUTDOWN_GRACE_SECONDS"], 60, "APPSTACK_SHUTDOWN_GRACE_SECONDS") * 1000,
    operationTimeoutMs: positiveInt(setting("operation-timeout-seconds", "APPSTACK_OPERATION_TIMEOUT_SECONDS"), 300, "operation timeout") * 1000,
    historyLimit: positiveInt(env["APPSTACK_HISTORY_LIMIT"], defaultHistoryLimit, "APPSTACK_HISTORY_LIMIT"),
    // Flux's default interval. The check reads only the watch caches and starts no Pulumi process,
    // so it is cheap; it is the backstop for a change no watch event announced.
    resyncMs: positiveInt(setting("resync-seconds", "APPSTACK_RESYNC_SECONDS"), 600, "resync period") * 1000,
    podStartTimeoutMs: positiveInt(env["APPSTACK_POD_START_TIMEOUT_SECONDS"], defaultPodStartTimeoutMs / 1000, "APPSTACK_POD_START_TIMEOUT_SECONDS") * 1000,
    proxySyncMs: nonNegativeInt(env["APPSTACK_PROXY_SYNC_MS"], defaultProxySyncMs, "APPSTACK_PROXY_SYNC_MS"),
    cacheSyncTimeoutMs: positiveInt(env["APPSTACK_CACHE_SYNC_TIMEOUT_SECONDS"], 120, "APPSTACK_CACHE_SYNC_TIMEOUT_SECONDS") * 1000,
    // client-go asks for 5 to 10 minutes and finds a dead connection sooner through HTTP/2 pings;
    // client-node's watch has none, so the end of the watch is what shows its connection alive.
    watchTimeoutMs: positiveInt(env["APPSTACK_WATCH_TIMEOUT_SECONDS"], 60, "APPSTACK_WATCH_TIMEOUT_SECONDS") * 1000,
    objectMetrics: boolean(setting("object-metrics", "APPSTACK_OBJECT_METRICS"), false, "object metrics"),
    attachedProviders: boolean(env["APPSTACK_ATTACHED_PROVIDERS"], true, "APPSTACK_ATTACHED_PROVIDERS"),
    ...serviceAccountName(setting("default-service-account", "APPSTACK_DEFAULT_SERVICE_ACCOUNT")),
  };
}
