// The in-cluster install of appstack: CRDs, a namespace, a ServiceAccount with least-privilege
// RBAC, the stack-secrets passphrase, storage for stack state, and the operator Deployment.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { childKindNames, childKinds, groupVersionOf } from "../crds/child-kinds.ts";
import { ownershipPolicy, ownershipPolicyBinding } from "../crds/ownership.ts";
import { AppstackCrds } from "./crds.ts";

export interface AppstackInstallArgs {
  /** Namespace of the operator. Default appstack-system. */
  readonly namespace?: string;
  /** Operator image (see Dockerfile). Default appstack:0.1.0. */
  readonly image?: string;
  /** Operator replicas; one leads (Lease). Default 1: the default file backend lives on a ReadWriteOnce volume. */
  readonly replicas?: number;
  /** Namespaces to watch; empty for all. */
  readonly watchNamespaces?: readonly string[];
  /** A Pulumi backend URL; default a file backend on a PersistentVolumeClaim. */
  readonly backendUrl?: string;
  /** Objects reconciled at once. Default 3. */
  readonly parallelism?: number;
  /** Encrypts stack secrets; stored in a Secret. */
  readonly passphrase: pulumi.Input<string>;
  /** Size of the state volume. Default 1Gi. */
  readonly storageSize?: string;
}

export const operatorName = "appstack-operator";
const statePath = "/var/lib/appstack";
const healthPort = 8081;

/** Exactly the verbs the operator uses, per resource. */
export function operatorRules(): k8s.types.input.rbac.v1.PolicyRule[] {
  const observe = ["get", "list", "watch"];
  return [
    { apiGroups: ["appstack.dev"], resources: ["apps", "memcacheds"], verbs: [...observe, "patch"] },
    { apiGroups: ["appstack.dev"], resources: ["apps/status", "memcacheds/status"], verbs: ["get", "patch"] },
    // Children carry ownerReferences with blockOwnerDeletion, which needs update on finalizers.
    { apiGroups: ["appstack.dev"], resources: ["apps/finalizers", "memcacheds/finalizers"], verbs: ["update"] },
    ...childKindNames.map((kind) => ({ apiGroups: [groupVersionOf(kind).group], resources: [childKinds[kind].plural], verbs: [...observe, "create", "update", "patch", "delete"] })),
    { apiGroups: [""], resources: ["pods"], verbs: observe },
    { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
    // Only to tell whether an object's namespace is terminating.
    { apiGroups: [""], resources: ["namespaces"], verbs: ["get"] },
  ];
}

export function operatorEnvironment(args: AppstackInstallArgs, secretName: pulumi.Input<string>): k8s.types.input.core.v1.EnvVar[] {
  return [
    { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
    { name: "APPSTACK_HEALTH_ADDR", value: `:${healthPort}` },
    { name: "APPSTACK_STATE_DIR", value: statePath },
    { name: "APPSTACK_CONCURRENCY", value: String(args.parallelism ?? 3) },
    { name: "APPSTACK_NAMESPACES", value: (args.watchNamespaces ?? []).join(",") },
    // A backend URL may carry credentials: from the Secret, never a plain value in the Deployment.
    ...(args.backendUrl ? [{ name: "APPSTACK_BACKEND_URL", valueFrom: { secretKeyRef: { name: secretName, key: "backendUrl" } } }] : []),
    { name: "APPSTACK_PASSPHRASE", valueFrom: { secretKeyRef: { name: secretName, key: "passphrase" } } },
  ];
}

export class AppstackInstall extends pulumi.ComponentResource {
  public readonly namespace: pulumi.Output<string>;
  public readonly serviceAccount: pulumi.Output<string>;
  public readonly deployment: pulumi.Output<string>;

  constructor(name: string, args: AppstackInstallArgs, opts?: pulumi.ComponentResourceOptions) {
    super("appstack:install:Operator", name, {}, opts);
    const labels = { "app.kubernetes.io/name": operatorName, "app.kubernetes.io/instance": name, "app.kubernetes.io/part-of": "appstack" };
    const crds = new AppstackCrds(`${name}-crds`, {}, { parent: this });
    // The API server's own guard against taking over an object appstack did not create.
    const policy = new k8s.admissionregistration.v1.ValidatingAdmissionPolicy(`${name}-ownership`, ownershipPolicy as unknown as k8s.admissionregistration.v1.ValidatingAdmissionPolicyArgs, { parent: this });
    new k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(`${name}-ownership`, ownershipPolicyBinding as unknown as k8s.admissionregistration.v1.ValidatingAdmissionPolicyBindingArgs, { parent: this, dependsOn: [policy] });
    const ns = new k8s.core.v1.Namespace(`${name}-ns`, { metadata: { name: args.namespace ?? "appstack-system", labels } }, { parent: this });
    const namespace = ns.metadata.name;
    const meta = { name: operatorName, namespace, labels };
    const account = new k8s.core.v1.ServiceAccount(`${name}-sa`, { metadata: meta }, { parent: this });
    const subject = [{ kind: "ServiceAccount", name: account.metadata.name, namespace }];
    const role = new k8s.rbac.v1.ClusterRole(`${name}-role`, { metadata: { name: `${operatorName}-${name}`, labels }, rules: operatorRules() }, { parent: this });
    const roleRef = { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role.metadata.name };
    // Watching all namespaces needs the role cluster-wide; a list of namespaces binds it in each only.
    if (args.watchNamespaces?.length) {
      for (const watched of args.watchNamespaces) {
        new k8s.rbac.v1.RoleBinding(`${name}-binding-${watched}`, { metadata: { name: `${operatorName}-${name}`, namespace: watched, labels }, roleRef, subjects: subject }, { parent: this });
      }
    } else {
      new k8s.rbac.v1.ClusterRoleBinding(`${name}-binding`, { metadata: { name: `${operatorName}-${name}`, labels }, roleRef, subjects: subject }, { parent: this });
    }
    const leaseRole = new k8s.rbac.v1.Role(`${name}-leases`, {
      metadata: { ...meta, name: `${operatorName}-leader-election` },
      rules: [{ apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] }],
    }, { parent: this });
    new k8s.rbac.v1.RoleBinding(`${name}-leases`, {
      metadata: { ...meta, name: `${operatorName}-leader-election` },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: leaseRole.metadata.name },
      subjects: subject,
    }, { parent: this });
    const secret = new k8s.core.v1.Secret(`${name}-passphrase`, { metadata: { ...meta, name: `${operatorName}-passphrase` }, stringData: { passphrase: pulumi.secret(args.passphrase), ...(args.backendUrl ? { backendUrl: pulumi.secret(args.backendUrl) } : {}) } }, { parent: this });
    const volumes: k8s.types.input.core.v1.Volume[] = [];
    if (!args.backendUrl) {
      const claim = new k8s.core.v1.PersistentVolumeClaim(`${name}-state`, {
        metadata: { ...meta, name: `${operatorName}-state` },
        spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: args.storageSize ?? "1Gi" } } },
      }, { parent: this });
      volumes.push({ name: "state", persistentVolumeClaim: { claimName: claim.metadata.name } });
    } else {
      volumes.push({ name: "state", emptyDir: {} });
    }
    const deployment = new k8s.apps.v1.Deployment(`${name}-operator`, {
      metadata: meta,
      spec: {
        replicas: args.replicas ?? 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: account.metadata.name,
            securityContext: { runAsNonRoot: true, runAsUser: 65532, fsGroup: 65532 },
            containers: [{
              name: "operator",
              image: args.image ?? "appstack:0.1.0",
              env: operatorEnvironment(args, secret.metadata.name),
              ports: [{ name: "health", containerPort: healthPort }],
              livenessProbe: { httpGet: { path: "/healthz", port: "health" }, periodSeconds: 10 },
              readinessProbe: { httpGet: { path: "/readyz", port: "health" }, periodSeconds: 5 },
              resources: { requests: { cpu: "500m", memory: "512Mi" }, limits: { memory: "2Gi" } },
              volumeMounts: [{ name: "state", mountPath: statePath }],
            }],
            volumes,
            // Let running Pulumi operations finish (APPSTACK_SHUTDOWN_GRACE_SECONDS, 60) before SIGKILL.
            terminationGracePeriodSeconds: 90,
          },
        },
      },
    }, { parent: this, dependsOn: [crds] });
    this.namespace = namespace;
    this.serviceAccount = account.metadata.name;
    this.deployment = deployment.metadata.name;
    this.registerOutputs({ namespace: this.namespace, serviceAccount: this.serviceAccount, deployment: this.deployment });
  }
}
