// The install component under Pulumi's mocks: how the operator's Deployment rolls out, what its
// RBAC grants for a namespace-scoped install, that its pod meets Pod Security restricted, and the
// settings it refuses.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import * as pulumi from "@pulumi/pulumi";
import { recordRegistrations, registeredResource } from "../helpers/pulumi-mocks.ts";

const registered = await recordRegistrations();

// Imported after setMocks, as the mocks require.
let install: typeof import("../../components/install.ts");
before(async () => {
  install = await import("../../components/install.ts");
});

/** The inputs of the resource `name` of `type` once the engine (mocked) has it. */
async function inputsOf(resource: pulumi.ComponentResource, type: string, name: string): Promise<Record<string, unknown>> {
  await registeredResource(resource);
  // Children register after their parent: let them.
  for (let tries = 0; tries < 100 && !registered.some((r) => r.type === type && r.name === name); tries++) await new Promise((resolve) => setTimeout(resolve, 10));
  const found = registered.find((r) => r.type === type && r.name === name);
  assert.ok(found, `no ${type} ${name} registered`);
  return found.inputs;
}

type DeploymentSpec = { replicas: number; strategy: unknown; template: { spec: { containers: { env: { name: string; value?: string }[]; resources: unknown }[] } } };

test("on the state volume, the operator's Deployment is recreated on upgrade; with a shared backend it rolls, a new pod before the old one goes", async () => {
  const onVolume = new install.AppstackInstall("volume", { passphrase: "p" });
  const spec = (await inputsOf(onVolume, "kubernetes:apps/v1:Deployment", "volume-operator"))["spec"] as DeploymentSpec;
  assert.deepEqual(spec.strategy, { type: "Recreate" });
  assert.equal(spec.replicas, 1);
  assert.deepEqual(spec.template.spec.containers[0]?.resources, install.defaultResources);

  const shared = new install.AppstackInstall("shared", { passphrase: "p", backendUrl: "postgres://db.example/appstack", replicas: 2, resources: { requests: { cpu: "1", memory: "1Gi" } } });
  const sharedSpec = (await inputsOf(shared, "kubernetes:apps/v1:Deployment", "shared-operator"))["spec"] as DeploymentSpec;
  assert.deepEqual(sharedSpec.strategy, { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
  assert.equal(sharedSpec.replicas, 2);
  assert.deepEqual(sharedSpec.template.spec.containers[0]?.resources, { requests: { cpu: "1", memory: "1Gi" } });
  assert.ok(!registered.some((r) => r.type === "kubernetes:core/v1:PersistentVolumeClaim" && r.name === "shared-state"));
});

test("a postgres:// backend URL: the operator reads it from the Secret (never a plain value of the Deployment), no state volume, replicas allowed", async () => {
  const url = "postgres://appstack:s3cret@db.example:5432/appstack?sslmode=require";
  const onPostgres = new install.AppstackInstall("pg", { passphrase: "p", backendUrl: url, replicas: 2 });
  const spec = (await inputsOf(onPostgres, "kubernetes:apps/v1:Deployment", "pg-operator"))["spec"] as DeploymentSpec & { template: { spec: { volumes: unknown[] } } };
  assert.equal(spec.replicas, 2);
  const env = spec.template.spec.containers[0]?.env as { name: string; value?: string; valueFrom?: { secretKeyRef?: { key: string } } }[];
  assert.deepEqual(env.find((e) => e.name === "APPSTACK_BACKEND_URL")?.valueFrom?.secretKeyRef?.key, "backendUrl");
  assert.ok(!JSON.stringify(spec).includes("s3cret"), "the URL's password is not in the Deployment");
  assert.deepEqual(spec.template.spec.volumes, [{ name: "passphrase", secret: { secretName: "appstack-operator-passphrase", items: [{ key: "passphrase", path: "passphrase" }] } }, { name: "state", emptyDir: {} }, { name: "tmp", emptyDir: {} }]);
  assert.ok(!registered.some((r) => r.type === "kubernetes:core/v1:PersistentVolumeClaim" && r.name === "pg-state"));
  // Given as a plain string (index.ts reads its scheme), it is a secret in the stack's state.
  const secret = await inputsOf(onPostgres, "kubernetes:core/v1:Secret", "pg-passphrase");
  const stringData = secret["stringData"] as Record<string, unknown>;
  assert.equal(stringData[pulumi.runtime.specialSigKey], pulumi.runtime.specialSecretSig);
  assert.equal((stringData["value"] as Record<string, unknown>)["backendUrl"], url);
});

// A pod spec as the mocks record it: plain values.
interface Seccomp { type?: string }
interface SeLinux { type?: string; user?: string; role?: string }
interface PodContext { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: Seccomp; seLinuxOptions?: SeLinux; sysctls?: unknown[] }
interface ContainerContext extends PodContext { privileged?: boolean; allowPrivilegeEscalation?: boolean; capabilities?: { add?: string[]; drop?: string[] }; procMount?: string; readOnlyRootFilesystem?: boolean }
interface Container { name: string; securityContext?: ContainerContext; ports?: { hostPort?: number }[]; volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[] }
interface PodSpec { hostNetwork?: boolean; hostPID?: boolean; hostIPC?: boolean; securityContext?: PodContext; volumes?: ({ name: string } & Record<string, unknown>)[]; initContainers?: Container[]; containers: Container[] }

const restrictedVolumes = ["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"];
const restrictedSeLinuxTypes = ["container_t", "container_init_t", "container_kvm_t", "container_engine_t"];

/** Pod Security restricted's checks of one container, baseline's included; seccomp and runAsNonRoot may come from the pod. */
const containerChecks: [string, (context: ContainerContext, pod: PodContext, container: Container) => boolean][] = [
  ["privileged", (context) => context.privileged === true],
  ["allowPrivilegeEscalation != false", (context) => context.allowPrivilegeEscalation !== false],
  ["capabilities.drop does not include ALL", (context) => !context.capabilities?.drop?.includes("ALL")],
  ["capabilities.add beyond NET_BIND_SERVICE", (context) => (context.capabilities?.add ?? []).some((capability) => capability !== "NET_BIND_SERVICE")],
  ["runAsNonRoot != true", (context, pod) => (context.runAsNonRoot ?? pod.runAsNonRoot) !== true],
  ["runAsUser 0", (context) => context.runAsUser === 0],
  ["seccompProfile neither RuntimeDefault nor Localhost", (context, pod) => !["RuntimeDefault", "Localhost"].includes((context.seccompProfile ?? pod.seccompProfile)?.type ?? "")],
  ["procMount", (context) => context.procMount !== undefined && context.procMount !== "Default"],
  ["hostPort", (_context, _pod, container) => (container.ports ?? []).some((port) => port.hostPort)],
  ["seLinuxOptions", (context, pod) => {
    const options = context.seLinuxOptions ?? pod.seLinuxOptions;
    return Boolean(options?.user || options?.role || (options?.type && !restrictedSeLinuxTypes.includes(options.type)));
  }],
];

/** Pod Security restricted's checks of the pod itself. */
const podChecks: [string, (spec: PodSpec) => boolean][] = [
  ["host namespaces", (spec) => Boolean(spec.hostNetwork || spec.hostPID || spec.hostIPC)],
  ["a volume of a type restricted does not allow", (spec) => (spec.volumes ?? []).some((volume) => Object.keys(volume).some((key) => key !== "name" && !restrictedVolumes.includes(key)))],
  ["pod runAsUser 0", (spec) => spec.securityContext?.runAsUser === 0],
  ["sysctls", (spec) => (spec.securityContext?.sysctls?.length ?? 0) > 0],
];

/** What the Pod Security Standard `restricted` (latest) refuses in a pod spec: empty when a namespace that enforces it admits the pod. */
function restrictedViolations(spec: PodSpec): string[] {
  const pod = spec.securityContext ?? {};
  const containers = [...(spec.initContainers ?? []), ...spec.containers];
  return [
    ...podChecks.filter(([, violates]) => violates(spec)).map(([what]) => what),
    ...containers.flatMap((container) => containerChecks.filter(([, violates]) => violates(container.securityContext ?? {}, pod, container)).map(([what]) => `container ${container.name}: ${what}`)),
  ];
}

test("the operator's pod meets Pod Security restricted with a read-only root file system, writing only to its volumes; its namespace enforces restricted", async () => {
  for (const [name, args] of [["hardened", { passphrase: "p" }], ["hardened-pg", { passphrase: "p", backendUrl: "postgres://db.example/appstack", replicas: 2 }]] as const) {
    const component = new install.AppstackInstall(name, args);
    const spec = ((await inputsOf(component, "kubernetes:apps/v1:Deployment", `${name}-operator`))["spec"] as { template: { spec: PodSpec } }).template.spec;
    assert.deepEqual(restrictedViolations(spec), [], name);
    assert.deepEqual(spec.securityContext, { runAsNonRoot: true, runAsUser: 65532, fsGroup: 65532, seccompProfile: { type: "RuntimeDefault" } });
    const [operator] = spec.containers;
    assert.deepEqual(operator?.securityContext, { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] }, readOnlyRootFilesystem: true });
    // Writable: the state folder (the engines' home and workspace, the file backend) and /tmp (the
    // Automation API's event logs and stack imports); each mount a volume of the pod, nothing else.
    // The passphrase's Secret is mounted too, read-only.
    const mounts = operator?.volumeMounts ?? [];
    assert.deepEqual(mounts.filter((mount) => !mount.readOnly).map((mount) => mount.mountPath).sort(), ["/tmp", "/var/lib/appstack"]);
    assert.deepEqual(mounts.filter((mount) => mount.readOnly).map((mount) => mount.mountPath), ["/etc/appstack/passphrase"]);
    const volumes = new Map((spec.volumes ?? []).map((volume) => [volume.name, volume]));
    for (const mount of mounts) assert.ok(volumes.has(mount.name), mount.name);
    assert.deepEqual(volumes.get(mounts.find((mount) => mount.mountPath === "/tmp")!.name)?.emptyDir, {});
    const namespace = await inputsOf(component, "kubernetes:core/v1:Namespace", `${name}-ns`);
    assert.equal((namespace["metadata"] as { labels: Record<string, string> }).labels["pod-security.kubernetes.io/enforce"], "restricted");
  }
});

test("podStartTimeoutSeconds reaches the operator as APPSTACK_POD_START_TIMEOUT_SECONDS; unset, the operator's default holds; not a positive whole number, refused", () => {
  const envOf = (podStartTimeoutSeconds?: number) => install.operatorEnvironment({ passphrase: "p", ...(podStartTimeoutSeconds === undefined ? {} : { podStartTimeoutSeconds }) }, "secret");
  assert.deepEqual(envOf(30).find((e) => e.name === "APPSTACK_POD_START_TIMEOUT_SECONDS"), { name: "APPSTACK_POD_START_TIMEOUT_SECONDS", value: "30" });
  assert.ok(!envOf().some((e) => e.name === "APPSTACK_POD_START_TIMEOUT_SECONDS"));
  for (const bad of [0, -5, 1.5]) assert.throws(() => envOf(bad), new RegExp(`appstack:podStartTimeoutSeconds must be a positive whole number of seconds, not ${bad}`));
});

test("more than one replica on the state volume is refused, with what to set instead", () => {
  assert.throws(() => new install.AppstackInstall("two", { passphrase: "p", replicas: 2 }), /appstack:replicas 2 needs a PostgreSQL appstack:backendUrl \(postgres:\/\/\.\.\.\), the default file backend lives on a ReadWriteOnce volume/);
  assert.throws(() => new install.AppstackInstall("none", { passphrase: "p", replicas: 0 }), /appstack:replicas must be a positive integer, not 0/);
});

test("more than one replica is refused on any backend but PostgreSQL, naming postgres:// (and never the URL's password)", () => {
  // s3:// (any bucket): no replica can break a killed replica's stack lock there, so it stays for ever.
  assert.throws(() => new install.AppstackInstall("s3", { passphrase: "p", backendUrl: "s3://bucket", replicas: 2 }), /appstack:replicas 2 needs a PostgreSQL appstack:backendUrl \(postgres:\/\/\.\.\.\), not s3:\/\/: .*lock/);
  // file:// in the pod: every replica's own emptyDir.
  assert.throws(() => new install.AppstackInstall("file", { passphrase: "p", backendUrl: "file:///var/lib/appstack/backend", replicas: 3 }), /appstack:replicas 3 needs a PostgreSQL appstack:backendUrl \(postgres:\/\/\.\.\.\), not file:\/\/: .*emptyDir/);
  assert.throws(() => new install.AppstackInstall("https", { passphrase: "p", backendUrl: "https://user:s3cret@state.example", replicas: 2 }), (error: Error) => /not https:\/\//.test(error.message) && !error.message.includes("s3cret"));
  // One replica keeps any backend; postgresql:// is PostgreSQL too.
  assert.doesNotThrow(() => new install.AppstackInstall("s3-single", { passphrase: "p", backendUrl: "s3://bucket" }));
  assert.doesNotThrow(() => new install.AppstackInstall("pgsql", { passphrase: "p", backendUrl: "postgresql://db.example/appstack", replicas: 2 }));
});

test("a namespace-scoped install may touch its own binding only (its finalizers), is told its name, and reads the pods of its own namespace", async () => {
  const scoped = new install.AppstackInstall("scoped", { passphrase: "p", watchNamespaces: ["team-a", "team-b"] });
  const rules = (await inputsOf(scoped, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "scoped-role"))["rules"] as { resources: string[]; resourceNames?: string[]; verbs: string[] }[];
  const bindings = rules.filter((rule) => rule.resources.includes("rolebindings"));
  assert.deepEqual(bindings.map((rule) => [rule.resourceNames, rule.verbs]), [[["appstack-operator-scoped"], ["get", "patch"]]]);
  for (const namespace of ["team-a", "team-b"]) {
    const binding = await inputsOf(scoped, "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", `scoped-binding-${namespace}`);
    assert.equal((binding["metadata"] as { name: string }).name, "appstack-operator-scoped");
  }
  const spec = (await inputsOf(scoped, "kubernetes:apps/v1:Deployment", "scoped-operator"))["spec"] as DeploymentSpec;
  assert.ok(spec.template.spec.containers[0]?.env.some((e) => e.name === "APPSTACK_RBAC_BINDING" && e.value === "appstack-operator-scoped"));
  // ...and of that binding, its finalizers only: an admission policy for the operator's own user.
  const policy = (await inputsOf(scoped, "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "scoped-binding-policy"))["spec"] as { matchConstraints: { resourceRules: { resourceNames: string[] }[] }; matchConditions: { expression: string }[] };
  assert.deepEqual(policy.matchConstraints.resourceRules.map((rule) => rule.resourceNames), [["appstack-operator-scoped"]]);
  assert.deepEqual(policy.matchConditions.map((c) => c.expression), ["request.userInfo.username == 'system:serviceaccount:appstack-system:appstack-operator'"]);
  const own = (await inputsOf(scoped, "kubernetes:rbac.authorization.k8s.io/v1:Role", "scoped-leases"))["rules"] as { resources: string[]; verbs: string[] }[];
  assert.deepEqual(own.find((rule) => rule.resources.includes("pods"))?.verbs, ["get"]);
  // ...and its ReplicaSets, to tell whether a stack lock's holder is one of its pods (operator/kube/peer-pods.ts).
  assert.deepEqual(own.find((rule) => rule.resources.includes("replicasets"))?.verbs, ["list"]);
  assert.ok(spec.template.spec.containers[0]?.env.some((e) => e.name === "POD_NAMESPACE"));

  // All namespaces: no binding of its own to keep, so no right on bindings.
  const clusterWide = new install.AppstackInstall("wide", { passphrase: "p" });
  const wideRules = (await inputsOf(clusterWide, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "wide-role"))["rules"] as { resources: string[] }[];
  assert.ok(!wideRules.some((rule) => rule.resources.includes("rolebindings")));
  assert.ok(!registered.some((r) => r.name === "wide-binding-policy"));
  const wideSpec = (await inputsOf(clusterWide, "kubernetes:apps/v1:Deployment", "wide-operator"))["spec"] as DeploymentSpec;
  assert.ok(!wideSpec.template.spec.containers[0]?.env.some((e) => e.name === "APPSTACK_RBAC_BINDING"));
});

test("more than one replica shards the objects: APPSTACK_SHARDING, and the right to list the replicas' shard Leases and delete a dead one's", async () => {
  const sharded = new install.AppstackInstall("sharded", { passphrase: "p", backendUrl: "postgres://db.example/appstack", replicas: 3 });
  const spec = (await inputsOf(sharded, "kubernetes:apps/v1:Deployment", "sharded-operator"))["spec"] as DeploymentSpec;
  assert.ok(spec.template.spec.containers[0]?.env.some((e) => e.name === "APPSTACK_SHARDING" && e.value === "true"));
  const leases = (await inputsOf(sharded, "kubernetes:rbac.authorization.k8s.io/v1:Role", "sharded-leases"))["rules"] as { resources: string[]; verbs: string[] }[];
  assert.deepEqual(leases.find((rule) => rule.resources.includes("leases"))?.verbs, ["get", "list", "create", "update", "delete"]);
  const single = new install.AppstackInstall("single", { passphrase: "p" });
  const singleSpec = (await inputsOf(single, "kubernetes:apps/v1:Deployment", "single-operator"))["spec"] as DeploymentSpec;
  assert.ok(!singleSpec.template.spec.containers[0]?.env.some((e) => e.name === "APPSTACK_SHARDING"));
});

test("only the operator's ServiceAccount may set, change or remove the shard labels: the install's policy names it", async () => {
  const installed = new install.AppstackInstall("labels", { passphrase: "p", namespace: "ops" });
  const policy = (await inputsOf(installed, "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "labels-shard-labels"))["spec"] as { matchConditions: { expression: string }[] };
  assert.deepEqual(policy.matchConditions.map((c) => c.expression), ['!(request.userInfo.username in ["system:serviceaccount:ops:appstack-operator"])']);
  const binding = (await inputsOf(installed, "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", "labels-shard-labels"))["spec"] as { policyName: string; validationActions: string[] };
  assert.deepEqual(binding, { policyName: "appstack.dev-shard-labels", validationActions: ["Deny"] });
});

type PolicySpec = { matchConstraints: { resourceRules: { resources: string[]; operations: string[] }[] }; matchConditions: { expression: string }[]; validations: { expression: string; message: string; messageExpression: string }[] };

test("approving a plan is the RBAC verb approve: the install's policy asks the authorizer for it on the requested kind when the approval is set or changed, never of the operator's ServiceAccount", async () => {
  const installed = new install.AppstackInstall("approvers", { passphrase: "p", namespace: "ops" });
  const policy = (await inputsOf(installed, "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "approvers-approve"))["spec"] as PolicySpec;
  assert.deepEqual(policy.matchConstraints.resourceRules.map((r) => [r.resources, r.operations]), [[["apps", "memcacheds"], ["CREATE", "UPDATE"]]]);
  assert.deepEqual(policy.matchConditions.map((c) => c.expression), ['!(request.userInfo.username in ["system:serviceaccount:ops:appstack-operator"])']);
  const [validation] = policy.validations;
  // Only a write that approves asks; the check names the requested resource, so one rule holds for both kinds.
  assert.match(validation!.expression, /^!variables\.approves \|\| authorizer\.group\('appstack\.dev'\)\.resource\(request\.resource\.resource\)\.namespace\(request\.namespace\)\.name\(request\.name\)\.check\('approve'\)\.allowed\(\)$/);
  assert.match(validation!.message, /needs the RBAC verb approve on apps\.appstack\.dev: a Role rule \{apiGroups: \[appstack\.dev\], resources: \[apps\], verbs: \[approve\]\}/);
  assert.match(validation!.messageExpression, /resources: \[' \+ request\.resource\.resource \+ '\], verbs: \[approve\]\}'$/);
  const binding = (await inputsOf(installed, "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", "approvers-approve"))["spec"] as { policyName: string; validationActions: string[] };
  assert.deepEqual(binding, { policyName: "appstack.dev-approve", validationActions: ["Deny"] });
});

test("the operator never acts in kube-system nor its own namespace, nor in those the install adds", async () => {
  const envOf = async (made: InstanceType<typeof install.AppstackInstall>, name: string) => ((await inputsOf(made, "kubernetes:apps/v1:Deployment", name))["spec"] as DeploymentSpec).template.spec.containers[0]?.env;
  const excluded = (env: { name: string; value?: string }[] | undefined) => env?.find((e) => e.name === "APPSTACK_EXCLUDED_NAMESPACES")?.value;
  assert.equal(excluded(await envOf(new install.AppstackInstall("plain", { passphrase: "p" }), "plain-operator")), "kube-system,appstack-system");
  assert.equal(excluded(await envOf(new install.AppstackInstall("more", { passphrase: "p", namespace: "ops", excludedNamespaces: ["kube-system", "platform"] }), "more-operator")), "kube-system,platform,ops");
  assert.equal(excluded(await envOf(new install.AppstackInstall("none", { passphrase: "p", excludedNamespaces: [] }), "none-operator")), "appstack-system");
});

// Last: it sets the stack's configuration, and the program runs once per process (a module).
test("the install program (index.ts) refuses more than one replica on a backend URL that is not PostgreSQL", async () => {
  pulumi.runtime.setAllConfig({ "appstack:replicas": "2", "appstack:backendUrl": "s3://bucket", "appstack:passphrase": "p" }, ["appstack:backendUrl", "appstack:passphrase"]);
  await assert.rejects(import("../../index.ts"), /appstack:replicas 2 needs a PostgreSQL appstack:backendUrl \(postgres:\/\/\.\.\.\), not s3:\/\//);
});

test("networkPolicy: none unless asked; asked, one that selects the operator's pods, lets in the health and metrics ports and lets out DNS, the API server and the database", async () => {
  const plain = new install.AppstackInstall("no-policy", { passphrase: "p" });
  await inputsOf(plain, "kubernetes:apps/v1:Deployment", "no-policy-operator");
  assert.ok(!registered.some((r) => r.type === "kubernetes:networking.k8s.io/v1:NetworkPolicy" && r.name === "no-policy-network-policy"));
  const fenced = new install.AppstackInstall("fenced", { passphrase: "p", backendUrl: "postgres://appstack:pw@db.example:6543/appstack", networkPolicy: true });
  const policy = await inputsOf(fenced, "kubernetes:networking.k8s.io/v1:NetworkPolicy", "fenced-network-policy");
  const labels = { "app.kubernetes.io/name": "appstack-operator", "app.kubernetes.io/instance": "fenced", "app.kubernetes.io/part-of": "appstack" };
  assert.deepEqual(policy["spec"], {
    podSelector: { matchLabels: labels },
    policyTypes: ["Ingress", "Egress"],
    ingress: [{ ports: [{ protocol: "TCP", port: 8081 }, { protocol: "TCP", port: 8443 }] }],
    egress: [
      { ports: [{ protocol: "UDP", port: 53 }, { protocol: "TCP", port: 53 }] },
      { ports: [{ protocol: "TCP", port: 443 }, { protocol: "TCP", port: 6443 }] },
      { ports: [{ protocol: "TCP", port: 6543 }] },
    ],
  });
  assert.equal((policy["metadata"] as { namespace: string }).namespace, "appstack-system");
});
