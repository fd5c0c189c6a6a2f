// The in-cluster install of appstack: CRDs, a namespace, a ServiceAccount with least-privilege
// RBAC, the stack-secrets passphrase, storage for stack state, and the operator Deployment.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { isPostgresUrl, sharedBackendRefusal } from "../operator/base/shared-backend.ts";
import { admissionPolicies } from "./admission-policies.ts";
import { operatorBindingPolicy } from "./binding-policy.ts";
import { AppstackCrds } from "./crds.ts";
import { metricsAccess } from "./metrics-access.ts";
import { operatorNetworkPolicy } from "./network-policy.ts";
import { operatorRules } from "./operator-rules.ts";
import { prometheusRule } from "./prometheus-rule.ts";

export { operatorRules };

export interface AppstackInstallArgs {
  /** Namespace of the operator. Default appstack-system. */
  readonly namespace?: string;
  /** Operator image (see Dockerfile). Default appstack:0.1.0. */
  readonly image?: string;
  /** Operator replicas; one leads (Lease). Default 1; more need a PostgreSQL `backendUrl` (`postgres://`), the one backend they can share. */
  readonly replicas?: number;
  /** Namespaces to watch; empty for all. */
  readonly watchNamespaces?: readonly string[];
  /** Watching all: namespaces the operator never acts in besides its own. Default [kube-system]. */
  readonly excludedNamespaces?: readonly string[];
  /**
   * A Pulumi backend URL; default a file backend on a PersistentVolumeClaim. It may carry a password:
   * made a secret here, kept in a Secret. A plain string: its scheme decides the volume, the rollout
   * and the replicas allowed, so it must be known at preview.
   */
  readonly backendUrl?: string;
  /**
   * Instead of `backendUrl`: a Secret in the operator's namespace, made by the user, whose
   * `backendUrl` key holds a PostgreSQL URL (`postgres://`). The install never sees the URL, so a
   * rendered install (`appstack manifests`) holds no credential.
   */
  readonly backendSecret?: string;
  /**
   * A Secret in the operator's namespace holding, under `ca.crt`, the CA bundle a `postgres://`
   * backendUrl's server certificate is verified against (a private CA: RDS, Cloud SQL,
   * CloudNativePG). Mounted read-only and named by PGSSLROOTCERT, which the operator and its
   * engines read as the URL's `sslrootcert` (the URL's own wins); with it, a URL that names no
   * `sslmode` is `verify-full` (operator/pulumi/postgres-tls.ts).
   */
  readonly backendCaSecret?: string;
  /** Objects reconciled at once. Default 3. */
  readonly parallelism?: number;
  /**
   * How long an object's pods may fail to start (an image that cannot be pulled, a crash loop)
   * before the object is Stalled instead of Reconciling. Default: the operator's, 120 s.
   */
  readonly podStartTimeoutSeconds?: number;
  /** Encrypts stack secrets; stored in a Secret the install makes. Either this or `passphraseSecret`. */
  readonly passphrase?: pulumi.Input<string>;
  /** Instead of `passphrase`: a Secret in the operator's namespace, made by the user, with the passphrase under its `passphrase` key. */
  readonly passphraseSecret?: string;
  /** Size of the state volume. Default 1Gi. */
  readonly storageSize?: string;
  /** The operator container's requests and limits. Default `defaultResources`. */
  readonly resources?: k8s.types.input.core.v1.ResourceRequirements;
  /** Metrics per object too, labelled {kind, namespace, name} (APPSTACK_OBJECT_METRICS): their series grow with the objects. Default false. */
  readonly objectMetrics?: boolean;
  /**
   * A Service for the operator's metrics and a Prometheus operator ServiceMonitor
   * (monitoring.coreos.com/v1) that scrapes every replica through it, over HTTPS with the
   * Prometheus ServiceAccount's token (bind it to the metrics-reader ClusterRole). Needs the
   * Prometheus operator's CRDs in the cluster. Default false.
   */
  readonly serviceMonitor?: boolean;
  /**
   * A Prometheus operator PrometheusRule (monitoring.coreos.com/v1) with appstack's alerts
   * (components/prometheus-rule.ts), each naming its entry in the on-call runbook. They read the
   * series as the ServiceMonitor labels them. Needs the Prometheus operator's CRDs. Default false.
   */
  readonly prometheusRule?: boolean;
  /**
   * A kubernetes.io/tls Secret in the operator's namespace (tls.crt, tls.key; ca.crt for the
   * ServiceMonitor to verify it) for the metrics server, mounted read-only and named by
   * APPSTACK_METRICS_CERT_DIR. Its certificate names `appstack-operator-metrics.<namespace>.svc`.
   * Default: the operator makes a self-signed one at start, in memory.
   */
  readonly metricsCertSecret?: string;
  /**
   * Tenant identities (APPSTACK_DEFAULT_SERVICE_ACCOUNT, docs/security.md#tenant-identities): each
   * object's children are written as a ServiceAccount of its namespace, the one its
   * spec.serviceAccountName names or this one, through impersonation; the operator then may
   * impersonate ServiceAccounts and only read Deployments and Services. Default: off.
   */
  readonly defaultServiceAccount?: string;
  /**
   * A NetworkPolicy for the operator's pods (components/network-policy.ts): egress only to DNS, the
   * API server's ports and the database's, ingress only to the health port (/metrics). Needs a
   * network plugin that enforces NetworkPolicy. Default false.
   */
  readonly networkPolicy?: boolean;
  /**
   * A folder of kind files (docs/writing-a-kind.md), loaded by the install program before this
   * component (index.ts): their CRDs, RBAC and policies are installed with App's and Memcached's.
   * The operator reads the same files from `kindsImageDir` in its image, a thin layer over the
   * released one.
   */
  readonly kinds?: string;
}

/** Where the operator's image holds the kind files of `kinds` (APPSTACK_KINDS_DIR): a layer adds them, `COPY kinds/ /app/kinds/`. */
export const kindsImageDir = "/app/kinds";

export const operatorName = "appstack-operator";
const statePath = "/var/lib/appstack";
/** Where backendCaSecret's bundle is mounted. */
const backendCaPath = "/etc/appstack/backend-ca";
/** Where the passphrase's Secret is mounted: a file, not an environment variable (which `kubectl describe`, a crash dump or a child process would see). */
const passphrasePath = "/etc/appstack/passphrase";
const healthPort = 8081;
/** /metrics, over HTTPS: kubebuilder's scaffolds' port. */
const metricsPort = 8443;
/** Where metricsCertSecret is mounted. */
const metricsCertPath = "/etc/appstack/metrics-cert";
/** Keeps the operator's rights in a watched namespace while appstack objects there have finalizers (operator/controller/binding-guard.ts). */
export const rbacInUseFinalizer = "appstack.dev/rbac-in-use";

/**
 * Sized from the measured peak at 1,000 objects on one replica (`npm run bench:scale`, 2026-11-27 at
 * 827c4df, kept providers on: docs/measurements.md "1,000 Apps on one replica"): 1,000 new Apps at
 * once at the default parallelism of 3 peaked at 735 MiB PSS for the operator and everything it
 * started, 290 MiB once quiet. The request is that peak, rounded up (768 MiB), so that the defaults
 * hold up to 1,000 objects without the pod going above its request (the first a short node evicts);
 * the limit, twice it (1.5 GiB), leaves room for the page cache a limit counts and for larger stacks
 * than those Apps rather than kill an engine mid-update (its stack then stays locked until the next
 * leader recovers it). No CPU limit: an engine keeps a core busy while it runs, and throttling would
 * only stretch operations towards their deadlines.
 */
export const defaultResources = { requests: { cpu: "500m", memory: "768Mi" }, limits: { memory: "1536Mi" } };

/** The label that makes the API server refuse, in the operator's namespace, any pod Pod Security `restricted` forbids. */
export const enforceRestricted = { "pod-security.kubernetes.io/enforce": "restricted" };

/** What Pod Security restricted asks of a container, and a root file system nothing writes to. */
const operatorSecurityContext = { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] }, readOnlyRootFilesystem: true };

/**
 * Where the operator writes: its state folder (the engines' PULUMI_HOME and workspace, and the file
 * backend, all below APPSTACK_STATE_DIR) and /tmp, where the Automation API keeps each operation's
 * event log and a stack's import file. Nothing else: HOME is never written (the engines' home is in
 * the state folder), so the root file system is read-only.
 */
const operatorMounts = [{ name: "state", mountPath: statePath }, { name: "tmp", mountPath: "/tmp" }];

/** The operator's user as the API server names it: its ServiceAccount's. */
export function operatorUser(args: Pick<AppstackInstallArgs, "namespace">): string {
  return `system:serviceaccount:${args.namespace ?? "appstack-system"}:${operatorName}`;
}

/** `secretName`: the Secret the install makes for the values given in its configuration (passphrase, backendUrl), if any. */
export function operatorEnvironment(args: AppstackInstallArgs, secretName?: pulumi.Input<string>, rbacBinding?: string): k8s.types.input.core.v1.EnvVar[] {
  const fromSecret = (name: pulumi.Input<string> | undefined, key: string) => ({ secretKeyRef: { name: name ?? "", key } });
  return [
    { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
    // Where the replicas' pods are, whatever the Lease's namespace: a stack lock is judged by them (operator/kube/peer-pods.ts).
    { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
    { name: "APPSTACK_HEALTH_ADDR", value: `:${healthPort}` },
    ...metricsEnvironment(args),
    { name: "APPSTACK_STATE_DIR", value: statePath },
    { name: "APPSTACK_CONCURRENCY", value: String(args.parallelism ?? 3) },
    ...(args.podStartTimeoutSeconds === undefined ? [] : [{ name: "APPSTACK_POD_START_TIMEOUT_SECONDS", value: String(positiveSeconds(args.podStartTimeoutSeconds, "podStartTimeoutSeconds")) }]),
    { name: "APPSTACK_NAMESPACES", value: (args.watchNamespaces ?? []).join(",") },
    // Its own namespace always: its ServiceAccount's, whose rights are the operator's.
    { name: "APPSTACK_EXCLUDED_NAMESPACES", value: [...new Set([...(args.excludedNamespaces ?? ["kube-system"]), args.namespace ?? "appstack-system"])].join(",") },
    ...(rbacBinding ? [{ name: "APPSTACK_RBAC_BINDING", value: rbacBinding }] : []),
    // A backend URL may carry credentials: from the Secret, never a plain value in the Deployment.
    ...(args.backendUrl || args.backendSecret ? [{ name: "APPSTACK_BACKEND_URL", valueFrom: fromSecret(args.backendSecret ?? secretName, "backendUrl") }] : []),
    // libpq's variable for the URL's sslrootcert: Pulumi's driver and the operator's reads take it alike.
    ...(args.backendCaSecret ? [{ name: "PGSSLROOTCERT", value: `${backendCaPath}/ca.crt` }] : []),
    // The Secret's passphrase key, mounted by passphraseVolumes.
    { name: "APPSTACK_PASSPHRASE_FILE", value: `${passphrasePath}/passphrase` },
    // More than one replica: each reconciles a share of the objects (docs/sharding.md).
    ...(operatorReplicas(args) > 1 ? [{ name: "APPSTACK_SHARDING", value: "true" }] : []),
    ...(args.objectMetrics ? [{ name: "APPSTACK_OBJECT_METRICS", value: "true" }] : []),
    ...(args.defaultServiceAccount ? [{ name: "APPSTACK_DEFAULT_SERVICE_ACCOUNT", value: args.defaultServiceAccount }] : []),
    ...(args.kinds ? [{ name: "APPSTACK_KINDS_DIR", value: kindsImageDir }] : []),
  ];
}

/** /metrics over HTTPS on its own port, with the certificate of metricsCertSecret if given (else self-signed, made at start). */
function metricsEnvironment(args: AppstackInstallArgs): k8s.types.input.core.v1.EnvVar[] {
  return [
    { name: "APPSTACK_METRICS_ADDR", value: `:${metricsPort}` },
    ...(args.metricsCertSecret ? [{ name: "APPSTACK_METRICS_CERT_DIR", value: metricsCertPath }] : []),
  ];
}

/** Refused here, at preview, rather than by the operator's start in a pod that then crash-loops. */
function positiveSeconds(seconds: number, option: string): number {
  if (!Number.isInteger(seconds) || seconds < 1) throw new Error(`appstack:${option} must be a positive whole number of seconds, not ${seconds}`);
  return seconds;
}

/** Each secret value from exactly one place: the configuration, or a Secret the user made. */
export function checkSecretSources(args: AppstackInstallArgs): void {
  if ((args.passphrase === undefined) === (args.passphraseSecret === undefined)) throw new Error("set exactly one of appstack:passphrase (a secret of the stack) and appstack:passphraseSecret (the name of a Secret you made, with a passphrase key)");
  if (args.backendUrl && args.backendSecret) throw new Error("set at most one of appstack:backendUrl and appstack:backendSecret (the name of a Secret you made, with a backendUrl key)");
}

/** The replicas asked for; more than one only on PostgreSQL, the one backend they can share. */
export function operatorReplicas(args: AppstackInstallArgs): number {
  const replicas = args.replicas ?? 1;
  if (!Number.isInteger(replicas) || replicas < 1) throw new Error(`appstack:replicas must be a positive integer, not ${replicas}`);
  if (replicas > 1) {
    // A backendSecret's URL is not known here: the operator refuses to start sharded on it unless it is PostgreSQL.
    // With no URL, a second pod would wait for the state volume for ever (ReadWriteOnce, one pod at a time).
    const why = args.backendSecret ? undefined : args.backendUrl ? sharedBackendRefusal(args.backendUrl) : "the default file backend lives on a ReadWriteOnce volume that one pod mounts at a time";
    if (why) throw new Error(`appstack:replicas ${replicas} needs a PostgreSQL appstack:backendUrl (postgres://...), ${why}`);
  }
  return replicas;
}

/** backendCaSecret's volume and the operator's mount of it (none without it); only with a PostgreSQL backendUrl, the one it is for. */
export function backendCaVolumes(args: AppstackInstallArgs): { volumes: k8s.types.input.core.v1.Volume[]; mounts: k8s.types.input.core.v1.VolumeMount[] } {
  if (!args.backendCaSecret) return { volumes: [], mounts: [] };
  if (!args.backendSecret && !isPostgresUrl(args.backendUrl)) throw new Error("appstack:backendCaSecret is the CA bundle of a PostgreSQL appstack:backendUrl (postgres://...), and none is set");
  return {
    volumes: [{ name: "backend-ca", secret: { secretName: args.backendCaSecret, items: [{ key: "ca.crt", path: "ca.crt" }] } }],
    mounts: [{ name: "backend-ca", mountPath: backendCaPath, readOnly: true }],
  };
}

/** metricsCertSecret's volume and the operator's mount of it (none without it). */
export function metricsCertVolumes(args: AppstackInstallArgs): { volumes: k8s.types.input.core.v1.Volume[]; mounts: k8s.types.input.core.v1.VolumeMount[] } {
  if (!args.metricsCertSecret) return { volumes: [], mounts: [] };
  return {
    volumes: [{ name: "metrics-cert", secret: { secretName: args.metricsCertSecret, items: [{ key: "tls.crt", path: "tls.crt" }, { key: "tls.key", path: "tls.key" }] } }],
    mounts: [{ name: "metrics-cert", mountPath: metricsCertPath, readOnly: true }],
  };
}

/** The passphrase's Secret (the user's, or the one the install makes: `secretName`) as a read-only file that APPSTACK_PASSPHRASE_FILE names. */
export function passphraseVolumes(args: AppstackInstallArgs, secretName?: pulumi.Input<string>): { volumes: k8s.types.input.core.v1.Volume[]; mounts: k8s.types.input.core.v1.VolumeMount[] } {
  return {
    volumes: [{ name: "passphrase", secret: { secretName: args.passphraseSecret ?? secretName ?? "", items: [{ key: "passphrase", path: "passphrase" }] } }],
    mounts: [{ name: "passphrase", mountPath: passphrasePath, readOnly: true }],
  };
}

/**
 * A ReadWriteOnce state volume is mounted by one pod at a time: the old pod goes before the new
 * one starts (with a rolling update the new pod, on another node, would wait for the volume the
 * old one holds, and the old one stays until the new one is ready: the upgrade stalls). With a
 * shared backend and no volume, the new pod starts first as a standby and leads once the old one
 * has finished its operations and handed its lease over.
 */
export function rolloutStrategy(args: AppstackInstallArgs): k8s.types.input.apps.v1.DeploymentStrategy {
  return args.backendUrl || args.backendSecret ? { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } } : { type: "Recreate" };
}

type Meta = { name: string; namespace: pulumi.Input<string>; labels: Record<string, string> };

/** A Secret for the values given in the configuration (passphrase, backendUrl); none when the user's own Secrets hold them. */
function configuredSecret(name: string, args: AppstackInstallArgs, meta: Meta, parent: pulumi.Resource): k8s.core.v1.Secret | undefined {
  const given = { ...(args.passphrase === undefined ? {} : { passphrase: pulumi.secret(args.passphrase) }), ...(args.backendUrl ? { backendUrl: pulumi.secret(args.backendUrl) } : {}) };
  if (Object.keys(given).length === 0) return undefined;
  return new k8s.core.v1.Secret(`${name}-passphrase`, { metadata: { ...meta, name: `${operatorName}-passphrase` }, stringData: given }, { parent });
}

/** The state folder: a claimed volume for the file backend; with a backend URL, only the engines' home, an emptyDir. */
function stateVolume(name: string, args: AppstackInstallArgs, meta: Meta, parent: pulumi.Resource): k8s.types.input.core.v1.Volume {
  if (args.backendUrl || args.backendSecret) return { name: "state", emptyDir: {} };
  const claim = new k8s.core.v1.PersistentVolumeClaim(`${name}-state`, {
    metadata: { ...meta, name: `${operatorName}-state` },
    spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: args.storageSize ?? "1Gi" } } },
  }, { parent });
  return { name: "state", persistentVolumeClaim: { claimName: claim.metadata.name } };
}

/** The label that tells the metrics Service from anything else of the install: what the ServiceMonitor selects. */
export const metricsComponent = { "app.kubernetes.io/component": "metrics" };

/**
 * How Prometheus checks the metrics server's certificate. A certificate Secret's CA verifies it for
 * the Service's name; without one the certificate is self-signed, made at start, and nothing can
 * verify it, so verification is skipped, as kubebuilder's scaffolded ServiceMonitor does (its
 * config/prometheus/monitor.yaml; its cert-manager patch brings the CA instead). The scrape is
 * encrypted either way, and the token is what admits it.
 */
export function metricsTlsConfig(certSecret: string | undefined, namespace: pulumi.Input<string>): Record<string, unknown> {
  if (!certSecret) return { insecureSkipVerify: true };
  return { serverName: pulumi.interpolate`${operatorName}-metrics.${namespace}.svc`, ca: { secret: { name: certSecret, key: "ca.crt" } } };
}

/**
 * With serviceMonitor: a Service in front of every replica's metrics port and a ServiceMonitor that
 * scrapes each replica through it, over HTTPS with the token of Prometheus's own ServiceAccount
 * (kubebuilder's bearerTokenFile), which must be bound to the metrics-reader ClusterRole. Each
 * replica's metrics are its own (a standby's, a shard's), so every endpoint is scraped, not one.
 */
function metricsMonitoring(name: string, meta: Meta, podLabels: Record<string, string>, certSecret: string | undefined, parent: pulumi.Resource): void {
  const labels = { ...meta.labels, ...metricsComponent };
  const service = new k8s.core.v1.Service(`${name}-metrics`, {
    metadata: { ...meta, name: `${operatorName}-metrics`, labels },
    spec: { selector: podLabels, ports: [{ name: "metrics", port: metricsPort, targetPort: "metrics", protocol: "TCP" }] },
  }, { parent });
  new k8s.apiextensions.CustomResource(`${name}-metrics`, {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "ServiceMonitor",
    metadata: { ...meta, name: `${operatorName}-metrics`, labels },
    spec: {
      selector: { matchLabels: labels },
      namespaceSelector: { matchNames: [meta.namespace] },
      endpoints: [{
        port: "metrics",
        path: "/metrics",
        scheme: "https",
        bearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
        tlsConfig: metricsTlsConfig(certSecret, meta.namespace),
      }],
    },
  }, { parent, dependsOn: [service] });
}

/** What the install makes only when asked: the metrics Service and its ServiceMonitor, the alerts, the operator's NetworkPolicy. */
function optionalParts(name: string, args: AppstackInstallArgs, meta: Meta, podLabels: Record<string, string>, parent: pulumi.Resource): void {
  if (args.serviceMonitor) metricsMonitoring(name, meta, podLabels, args.metricsCertSecret, parent);
  if (args.prometheusRule) prometheusRule(name, meta, args.namespace ?? "appstack-system", parent);
  if (args.networkPolicy) operatorNetworkPolicy(name, meta, { podLabels, ingressPorts: [healthPort, metricsPort], backendUrl: args.backendUrl, backendSecret: !!args.backendSecret }, parent);
}

export class AppstackInstall extends pulumi.ComponentResource {
  public readonly namespace: pulumi.Output<string>;
  public readonly serviceAccount: pulumi.Output<string>;
  public readonly deployment: pulumi.Output<string>;

  constructor(name: string, args: AppstackInstallArgs, opts?: pulumi.ComponentResourceOptions) {
    super("appstack:install:Operator", name, {}, opts);
    checkSecretSources(args);
    const replicas = operatorReplicas(args);
    const backendCa = backendCaVolumes(args);
    const metricsCert = metricsCertVolumes(args);
    const scoped = (args.watchNamespaces?.length ?? 0) > 0;
    const bindingName = `${operatorName}-${name}`;
    const labels = { "app.kubernetes.io/name": operatorName, "app.kubernetes.io/instance": name, "app.kubernetes.io/part-of": "appstack" };
    const crds = new AppstackCrds(`${name}-crds`, {}, { parent: this });
    admissionPolicies(name, operatorUser(args), this);
    // Every pod of the operator's namespace is checked against Pod Security restricted, the operator's own included.
    const ns = new k8s.core.v1.Namespace(`${name}-ns`, { metadata: { name: args.namespace ?? "appstack-system", labels: { ...labels, ...enforceRestricted } } }, { parent: this });
    const namespace = ns.metadata.name;
    const meta = { name: operatorName, namespace, labels };
    const account = new k8s.core.v1.ServiceAccount(`${name}-sa`, { metadata: meta }, { parent: this });
    const subject = [{ kind: "ServiceAccount", name: account.metadata.name, namespace }];
    const role = new k8s.rbac.v1.ClusterRole(`${name}-role`, { metadata: { name: `${operatorName}-${name}`, labels }, rules: operatorRules(scoped ? bindingName : undefined, !!args.defaultServiceAccount) }, { parent: this });
    const roleRef = { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role.metadata.name };
    // Watching all namespaces needs the role cluster-wide; a list of namespaces binds it in each only.
    if (scoped) {
      for (const watched of args.watchNamespaces ?? []) {
        new k8s.rbac.v1.RoleBinding(`${name}-binding-${watched}`, { metadata: { name: bindingName, namespace: watched, labels }, roleRef, subjects: subject }, { parent: this });
      }
      operatorBindingPolicy(name, { username: pulumi.interpolate`system:serviceaccount:${namespace}:${account.metadata.name}`, binding: bindingName, labels }, this);
    } else {
      new k8s.rbac.v1.ClusterRoleBinding(`${name}-binding`, { metadata: { name: bindingName, labels }, roleRef, subjects: subject }, { parent: this });
    }
    metricsAccess(operatorName, name, subject, labels, this);
    const leaseRole = new k8s.rbac.v1.Role(`${name}-leases`, {
      metadata: { ...meta, name: `${operatorName}-leader-election` },
      rules: [
        // Sharded, the leader lists every replica's shard Lease, and deletes a dead replica's (docs/sharding.md).
        { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: replicas > 1 ? ["get", "list", "create", "update", "delete"] : ["get", "create", "update"] },
        // The replicas' pods: a new leader breaks a dead replica's stack lock once its pod is gone,
        // and only a pod of this install's ReplicaSets (operator/kube/peer-pods.ts). A
        // namespace-scoped install's role does not cover this namespace.
        { apiGroups: [""], resources: ["pods"], verbs: ["get"] },
        { apiGroups: ["apps"], resources: ["replicasets"], verbs: ["list"] },
      ],
    }, { parent: this });
    new k8s.rbac.v1.RoleBinding(`${name}-leases`, {
      metadata: { ...meta, name: `${operatorName}-leader-election` },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: leaseRole.metadata.name },
      subjects: subject,
    }, { parent: this });
    const secret = configuredSecret(name, args, meta, this);
    const passphrase = passphraseVolumes(args, secret?.metadata.name);
    const volumes = [...backendCa.volumes, ...metricsCert.volumes, ...passphrase.volumes, stateVolume(name, args, meta, this), { name: "tmp", emptyDir: {} }];
    const deployment = new k8s.apps.v1.Deployment(`${name}-operator`, {
      metadata: meta,
      spec: {
        replicas,
        strategy: rolloutStrategy(args),
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: account.metadata.name,
            securityContext: { runAsNonRoot: true, runAsUser: 65532, fsGroup: 65532, seccompProfile: { type: "RuntimeDefault" } },
            containers: [{
              name: "operator",
              image: args.image ?? "appstack:0.1.0",
              env: operatorEnvironment(args, secret?.metadata.name, scoped ? bindingName : undefined),
              ports: [{ name: "health", containerPort: healthPort }, { name: "metrics", containerPort: metricsPort }],
              livenessProbe: { httpGet: { path: "/healthz", port: "health" }, periodSeconds: 10 },
              readinessProbe: { httpGet: { path: "/readyz", port: "health" }, periodSeconds: 5 },
              resources: args.resources ?? defaultResources,
              securityContext: operatorSecurityContext,
              volumeMounts: [...operatorMounts, ...backendCa.mounts, ...metricsCert.mounts, ...passphrase.mounts],
            }],
            volumes,
            // Let running Pulumi operations finish (APPSTACK_SHUTDOWN_GRACE_SECONDS, 60) before SIGKILL.
            terminationGracePeriodSeconds: 90,
          },
        },
      },
    }, { parent: this, dependsOn: [crds] });
    optionalParts(name, args, meta, labels, this);
    this.namespace = namespace;
    this.serviceAccount = account.metadata.name;
    this.deployment = deployment.metadata.name;
    this.registerOutputs({ namespace: this.namespace, serviceAccount: this.serviceAccount, deployment: this.deployment });
  }
}
