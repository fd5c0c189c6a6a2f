// The operator's settings as one list: each environment variable with its flag (if it has one),
// the install option that sets it (if any), its default and its meaning. The options reference in
// docs/configuration.md is generated from this list, Pulumi.yaml and `appstack manifests`' flags
// (operator/cmd/options-reference.ts), and test/unit/options-reference.test.ts checks the list
// against what loadConfig reads, operatorOptions and what the install sets. Meanings are Markdown,
// with links relative to docs/.
import type { operatorOptions } from "./config.ts";

export interface OperatorSetting {
  /** The environment variable(s), as read; the first is the main one. */
  readonly env: readonly string[];
  /** The operator's flag, as in operatorOptions. */
  readonly flag?: keyof typeof operatorOptions;
  /** The install option (`appstack:<key>`, Pulumi.yaml) that sets it, if one does. */
  readonly install?: string;
  /** The default, as a person reads it. */
  readonly default: string;
  readonly meaning: string;
}

export const operatorSettings: readonly OperatorSetting[] = [
  { env: ["KUBECONFIG"], flag: "kubeconfig", default: "`~/.kube/config`, else in-cluster in a pod", meaning: "the cluster; `npm start` alone never reads `~/.kube/config`: without a kubeconfig named it starts a local cluster" },
  { env: ["APPSTACK_NAMESPACES"], flag: "namespaces", install: "watchNamespaces", default: "all namespaces", meaning: "namespaces to watch, comma-separated; a listed namespace that answers 403 (deleted, its RoleBinding gone) is retried and reported, and holds neither the start nor the others ([how](running-in-the-cluster.md#a-watched-namespace-that-is-gone))" },
  { env: ["APPSTACK_EXCLUDED_NAMESPACES"], flag: "excluded-namespaces", install: "excludedNamespaces", default: "watching all: `kube-system` and the operator's own pod's namespace", meaning: "namespaces the operator never acts in, comma-separated; an empty value excludes none, and a list of namespaces to watch excludes none. An object there is Stalled (`NamespaceExcluded`, with a Warning Event), gets no finalizer and no stack, and none of the namespace's ServiceAccounts is acted as ([Security](security.md#tenant-identities)); the install always adds its own namespace" },
  { env: ["APPSTACK_CONCURRENCY"], flag: "concurrency", install: "parallelism", default: "one more than the cores the cgroup's CPU quota allows", meaning: "objects reconciled at once, each with its own engine; an engine keeps a core busy for only part of the time it runs, so one per core leaves cores idle ([the sweep](measurements.md#the-concurrency-sweep)); each more costs an engine's memory" },
  { env: ["APPSTACK_STATE_DIR"], flag: "state-dir", default: "`$XDG_STATE_HOME/appstack`, else `~/.local/state/appstack`", meaning: "the state folder: the file backend, the engines' home and workspace; under `npm start`, a folder of its local cluster, removed with it (the install: `/var/lib/appstack`)" },
  { env: ["APPSTACK_BACKEND_URL"], flag: "backend-url", install: "backendUrl", default: "`file://<state dir>/backend`", meaning: "where the stacks live; `postgres://user:password@host/db?sslmode=...` keeps them in PostgreSQL, shared by any number of replicas ([State backends](state-backends.md), [TLS](state-backends.md#tls-to-postgresql))" },
  { env: ["PGSSLROOTCERT"], install: "backendCaSecret", default: "unset (the install: the mounted `ca.crt` of `appstack:backendCaSecret`)", meaning: "libpq's CA bundle for a `postgres://` backend whose URL names no `sslrootcert`; with one, `sslmode` is `verify-full` unless the URL names another ([TLS](state-backends.md#tls-to-postgresql))" },
  { env: ["APPSTACK_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE"], default: "generated into the state folder, for the default file backend only", meaning: "encrypts the stacks' secrets; required for any other backend, as this or the file below" },
  { env: ["APPSTACK_PASSPHRASE_FILE", "PULUMI_CONFIG_PASSPHRASE_FILE"], install: "passphrase", default: "unset (the install: the mounted `passphrase` key of its Secret)", meaning: "a file holding the passphrase: `APPSTACK_PASSPHRASE_FILE` read as written (a final newline included, as the install's Secret holds it), `PULUMI_CONFIG_PASSPHRASE_FILE` trimmed, as Pulumi reads it; the passphrase itself in `APPSTACK_PASSPHRASE` wins" },
  { env: ["APPSTACK_HEALTH_ADDR"], flag: "health-addr", default: "`127.0.0.1:8081` (the install: `:8081`)", meaning: "where `/healthz` and `/readyz` listen, in plain HTTP for the kubelet's probes; without `APPSTACK_METRICS_ADDR`, `/metrics` too, which is refused unless this is a loopback address" },
  { env: ["APPSTACK_METRICS_ADDR"], flag: "metrics-addr", default: "unset: `/metrics` beside `/healthz` (the install: `:8443`)", meaning: "where `/metrics` listens on a server of its own: HTTPS, each request's bearer token checked with a TokenReview and its user with a SubjectAccessReview for `get` on `/metrics` ([Security](security.md#metrics))" },
  { env: ["APPSTACK_METRICS_SECURE"], flag: "metrics-secure", default: "`true`", meaning: "`false` serves `APPSTACK_METRICS_ADDR` in plain HTTP to anyone, and is refused unless that is a loopback address" },
  { env: ["APPSTACK_METRICS_CERT_DIR"], install: "metricsCertSecret", default: "unset: a self-signed certificate made at start, in memory (the install: the mounted `appstack:metricsCertSecret`, if set)", meaning: "a folder with the metrics server's `tls.crt` and `tls.key` (a mounted `kubernetes.io/tls` Secret), read again while it runs, so that a rotated certificate is served without a restart" },
  { env: ["APPSTACK_LEADER_ELECT"], flag: "leader-elect", default: "`true`", meaning: "elect one reconciling replica through a Lease" },
  { env: ["APPSTACK_LEASE_NAME"], default: "`appstack-operator`", meaning: "the leader's Lease; a sharded replica's shard Lease is `<name>-shard-<member>`" },
  { env: ["APPSTACK_LEASE_NAMESPACE"], default: "the pod's namespace in a cluster, else `default`", meaning: "the Leases' namespace" },
  { env: ["APPSTACK_SHARDING"], flag: "sharding", install: "replicas", default: "`false` (the install: `true` when `appstack:replicas` is above 1)", meaning: "every replica reconciles a share of the objects, assigned by the leader through a consistent hash ring; needs leader election and a PostgreSQL backend ([Sharding](sharding.md))" },
  { env: ["POD_NAME", "POD_NAMESPACE"], default: "unset (the install: from the downward API)", meaning: "the replica's own pod, by which it tells whether another host's stack lock is a pod of this install that is gone; unset, no other host's lock is ever broken" },
  { env: ["APPSTACK_RBAC_BINDING"], install: "watchNamespaces", default: "unset (the install sets it when it watches a list)", meaning: "the operator's RoleBinding in each watched namespace, kept with `appstack.dev/rbac-in-use` while objects there have finalizers ([why](running-in-the-cluster.md#namespace-scoped-installs-and-namespace-deletion))" },
  { env: ["APPSTACK_SHUTDOWN_GRACE_SECONDS"], default: "60", meaning: "seconds a SIGTERM waits for running Pulumi operations; the rest of the stop (watches, the Lease, the server) gets 15 s more" },
  { env: ["APPSTACK_WATCH_TIMEOUT_SECONDS"], default: "60", meaning: "seconds the API server keeps one watch open; a watch whose end has not come 15 s later is taken for a dead connection and resumed" },
  { env: ["APPSTACK_CACHE_SYNC_TIMEOUT_SECONDS"], default: "120", meaning: "seconds a new leader waits for every watch to list; past it, it releases the lease and exits, naming what it could not list" },
  { env: ["APPSTACK_OPERATION_TIMEOUT_SECONDS"], flag: "operation-timeout-seconds", default: "300", meaning: "the deadline in seconds of one Pulumi operation, of each Pulumi command around it, and of each state-folder call; past it the object says `OperationTimedOut` and the operation is retried with backoff ([How it works](how-it-works.md))" },
  { env: ["APPSTACK_HISTORY_LIMIT"], default: "20", meaning: "updates kept in each stack's history ([Bounded state](command-line.md#bounded-state))" },
  { env: ["APPSTACK_RESYNC_SECONDS"], flag: "resync-seconds", default: "600", meaning: "every object is checked against its live children this often, from the watch caches" },
  { env: ["APPSTACK_POD_START_TIMEOUT_SECONDS"], install: "podStartTimeoutSeconds", default: "120", meaning: "seconds an object's pods may fail to start before the object is Stalled instead of Reconciling ([API](api.md#condition-reasons))" },
  { env: ["APPSTACK_PROXY_SYNC_MS"], default: "1000", meaning: "milliseconds Ready waits after a Service's EndpointSlices last changed which ready pods they route to, for the service proxies to apply them: kube-proxy's `minSyncPeriod` (one second by default); `0`: Ready as soon as the slices list every ready pod ([API](api.md#status-both-kinds))" },
  { env: ["APPSTACK_OBJECT_METRICS"], flag: "object-metrics", install: "objectMetrics", default: "`false`", meaning: "metrics per object too, labelled `{kind, namespace, name}` ([Monitoring](monitoring.md#metrics-per-object))" },
  { env: ["APPSTACK_ATTACHED_PROVIDERS"], default: "`true`", meaning: "engines attach to a Kubernetes provider kept per engine slot; `false` starts a provider plugin per operation ([How it works](how-it-works.md))" },
  { env: ["APPSTACK_PROVIDER_ENV"], default: "empty", meaning: "more environment variables, by name (comma-separated), that the kept providers get besides what reaches the API server (such as `AWS_PROFILE` for an exec credential plugin)" },
  { env: ["APPSTACK_DEFAULT_SERVICE_ACCOUNT"], flag: "default-service-account", install: "defaultServiceAccount", default: "unset (off)", meaning: "tenant identities: each object's children are written as a ServiceAccount of its namespace, impersonated ([Security](security.md#tenant-identities))" },
  { env: ["APPSTACK_KINDS_DIR"], flag: "kinds", install: "kinds", default: "unset: App and Memcached alone (the install: `/app/kinds` when `appstack:kinds` is set)", meaning: "a folder of kind files, each `export default defineKind(...)`, served beside App and Memcached; a file that fails to load is logged and its kind not served, the others are ([Writing a kind](writing-a-kind.md))" },
  { env: ["APPSTACK_LOG_LEVEL"], flag: "log-level", default: "`info`", meaning: "`debug`, `info`, `warn` or `error`" },
  { env: ["APPSTACK_LOG_FORMAT"], flag: "log-format", default: "`json` (`text` under `npm start`)", meaning: "`json` or `text`" },
  { env: ["APPSTACK_RETRY_BASE_MS"], default: "2000", meaning: "the first retry's backoff in milliseconds, doubled after each failure" },
  { env: ["APPSTACK_RETRY_MAX_MS"], default: "300000", meaning: "the longest backoff in milliseconds" },
];
