// Each tenant's own identity end to end (docs/security.md#tenant-identities), on one local cluster
// whose API server authorizes with RBAC. The operator runs as a ServiceAccount of its own that
// holds nothing but the install's rules with tenant identities on (it may read Deployments and
// Services, and impersonate ServiceAccounts, never write them), from a kubeconfig that names its
// token file; it writes each App's children as the App's ServiceAccount. Read back from the API
// server (the children, the identity the engine used) and from the stack state (its resources).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { AuthorizationV1Api, RbacAuthorizationV1Api, type CoreV1Api, type V1PolicyRule } from "@kubernetes/client-node";
import type { Condition } from "../../crds/types.ts";
import type { App } from "../../components/app.ts";
import { operatorRules } from "../../components/install.ts";
import { installApi } from "../../operator/kube/apply.ts";
import { kubeClients } from "../../operator/kube/clients.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { toolPath } from "../../toolchain/tools.ts";
import { eventually, eventWithReason, orUndefined, useCluster } from "../helpers/cluster.ts";
import { mergePatch } from "../../operator/kube/clients.ts";
import { checkpointPath, disposeOperator, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { serviceAccountKubeconfig } from "../helpers/service-account-kubeconfig.ts";

const operatorNamespace = "appstack-system";
const operatorAccount = "appstack-operator";
const operatorUser = `system:serviceaccount:${operatorNamespace}:${operatorAccount}`;
/** The install-wide default (APPSTACK_DEFAULT_SERVICE_ACCOUNT). */
const defaultAccount = "appstack-tenant";
const teamA = "team-a";
const teamB = "team-b";

const scratch = mkdtempSync(join(tmpdir(), "appstack-tenancy-test-"));

let operator: OperatorProcess | undefined;
let workloads: Workloads;
let rbac: RbacAuthorizationV1Api;
let authz: AuthorizationV1Api;

/** What a tenant's ServiceAccount needs to have its Apps' children written as it. */
const tenantRules: V1PolicyRule[] = [
  { apiGroups: ["apps"], resources: ["deployments"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"] },
  { apiGroups: [""], resources: ["services"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"] },
];

async function namespaceWithAccount(core: CoreV1Api, namespace: string, account: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: account } } });
}

/** The Role a tenant's deployer is given, bound to its ServiceAccount. */
async function grant(namespace: string, account: string): Promise<void> {
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name: "appstack-deployer" }, rules: tenantRules } });
  await rbac.createNamespacedRoleBinding({ namespace, body: { metadata: { name: "appstack-deployer" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "appstack-deployer" }, subjects: [{ kind: "ServiceAccount", name: account, namespace }] } });
}

/**
 * The operator's identity: its ServiceAccount bound to exactly the install's rules with tenant
 * identities on, and a kubeconfig naming a token file (as a pod's is: the engines' kubeconfig then
 * names the same file, never the token). `tokenFile` is client-go's key, `token-file` client-node's.
 */
async function operatorKubeconfig(adminKubeconfig: string, core: CoreV1Api): Promise<string> {
  await core.createNamespace({ body: { metadata: { name: operatorNamespace } } });
  await core.createNamespacedServiceAccount({ namespace: operatorNamespace, body: { metadata: { name: operatorAccount } } });
  await rbac.createClusterRole({ body: { metadata: { name: "appstack-operator-tenancy-test" }, rules: operatorRules(undefined, true) as V1PolicyRule[] } });
  await rbac.createClusterRoleBinding({ body: { metadata: { name: "appstack-operator-tenancy-test" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "appstack-operator-tenancy-test" }, subjects: [{ kind: "ServiceAccount", name: operatorAccount, namespace: operatorNamespace }] } });
  return serviceAccountKubeconfig(core, adminKubeconfig, operatorNamespace, operatorAccount, scratch);
}

const cluster = useCluster(
  async ({ cluster: local, core }) => {
    const admin = loadKubeConfig(local.kubeconfig);
    rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    authz = admin.makeApiClient(AuthorizationV1Api);
    await installApi(kubeClients(local.kubeconfig), { operatorUsers: [operatorUser] });
    const kubeconfig = await operatorKubeconfig(local.kubeconfig, core);
    await namespaceWithAccount(core, teamA, "deployer");
    await namespaceWithAccount(core, teamB, defaultAccount);
    operator = await startOperatorProcess(kubeconfig, { installApi: false, env: { APPSTACK_LEADER_ELECT: "false", APPSTACK_DEFAULT_SERVICE_ACCOUNT: defaultAccount, APPSTACK_RETRY_BASE_MS: "1000", APPSTACK_RETRY_MAX_MS: "3000" } });
    workloads = new Workloads(local.kubeconfig);
  },
  // The token file goes after the operator: its engines read it to the end.
  async () => {
    await disposeOperator(operator);
    rmSync(scratch, { recursive: true, force: true });
  },
);

const spec = (extra: Record<string, unknown> = {}) => ({ image: "nginx:1.27", replicas: 1, port: 80, ...extra });

const condition = (app: App, type: Condition["type"]) => app.status?.conditions?.find((c) => c.type === type);

/** The resource types the App's stack records, from the checkpoint in the state folder (none before its first update). */
function stackResources(namespace: string, name: string): string[] {
  const path = checkpointPath(operator!.stateDir, "App", namespace, name);
  if (!existsSync(path)) return [];
  const file = JSON.parse(readFileSync(path, "utf8")) as { checkpoint: { latest?: { resources?: { type: string }[] } } };
  return (file.checkpoint.latest?.resources ?? []).map((resource) => resource.type);
}

const children = (namespace: string, name: string) =>
  Promise.all([orUndefined(() => cluster().apps.readNamespacedDeployment({ name, namespace })), orUndefined(() => cluster().core.readNamespacedService({ name, namespace }))]);

test("the operator's own identity may read but not write children, and may impersonate ServiceAccounts", async () => {
  const can = async (verb: string, resource: string, group = "apps") =>
    (await authz.createSubjectAccessReview({ body: { spec: { user: operatorUser, groups: ["system:serviceaccounts", `system:serviceaccounts:${operatorNamespace}`, "system:authenticated"], resourceAttributes: { namespace: teamA, verb, group, resource } } } })).status?.allowed;
  assert.equal(await can("list", "deployments"), true);
  assert.equal(await can("create", "deployments"), false, "the operator cannot create a Deployment with its own rights");
  assert.equal(await can("patch", "services", ""), false);
  assert.equal(await can("impersonate", "serviceaccounts", ""), true);
});

test("denied: an App whose ServiceAccount may not create Deployments is Stalled with the API server's 403, a Warning Event, and nothing created", async () => {
  await workloads.create({ kind: "App", metadata: { name: "web", namespace: teamA }, spec: spec({ serviceAccountName: "deployer" }) });
  const stalled = await eventually("App team-a/web Stalled, reason Forbidden", async () => {
    const app = (await workloads.get("App", teamA, "web")) as App;
    return condition(app, "Stalled")?.status === "True" && condition(app, "Stalled")?.reason === "Forbidden" ? app : undefined;
  });
  const message = condition(stalled, "Stalled")?.message ?? "";
  assert.match(message, /forbidden: User "system:serviceaccount:team-a:deployer" cannot \w+ resource "(deployments|services)"/, message);
  assert.equal(condition(stalled, "Ready")?.status, "False");
  await eventWithReason(cluster().core, teamA, "web", "Forbidden", (text) => text.includes("system:serviceaccount:team-a:deployer"));
  assert.deepEqual(await children(teamA, "web"), [undefined, undefined], "no Deployment and no Service on the API server");
  assert.deepEqual(stackResources(teamA, "web").filter((type) => type.startsWith("kubernetes:apps") || type.startsWith("kubernetes:core")), [], "the stack records no child");
  // The engine's kubeconfig names the operator's token by its file, never the token itself.
  const identities = join(operator!.stateDir, "identities");
  const token = readFileSync(join(scratch, "token"), "utf8");
  for (const file of readdirSync(identities)) assert.ok(!readFileSync(join(identities, file), "utf8").includes(token), `${file} holds no token`);
});

test("allowed: given the Role, the same App goes Ready with no spec change (the failure's retry), its children made as its ServiceAccount", async () => {
  const before = (await workloads.get("App", teamA, "web")).metadata.generation;
  await grant(teamA, "deployer");
  const app = (await workloads.ready("App", teamA, "web", 60_000)) as App;
  assert.equal(app.metadata.generation, before, "no spec change");
  const [deployment, service] = await children(teamA, "web");
  assert.ok(deployment && service, "its Deployment and Service exist");
  // Who wrote them, as the API server recorded it: appstack's field manager, through the tenant's request.
  assert.ok(deployment.metadata?.managedFields?.some((field) => field.manager === "appstack"), "applied by appstack's field manager");
  const recorded = stackResources(teamA, "web");
  assert.ok(recorded.includes("kubernetes:apps/v1:Deployment") && recorded.includes("kubernetes:core/v1:Service"), `the stack records its children: ${recorded.join(", ")}`);
  // The stack's state records neither the token nor whom the engine acted as: the provider read them from its environment.
  const state = readFileSync(checkpointPath(operator!.stateDir, "App", teamA, "web"), "utf8");
  assert.ok(!state.includes(readFileSync(join(scratch, "token"), "utf8")) && !state.includes("system:serviceaccount:team-a:deployer"), "no credential or identity in the stack state");
});

test("the install-wide default ServiceAccount acts for an App that names none", async () => {
  await workloads.create({ kind: "App", metadata: { name: "api", namespace: teamB }, spec: spec() });
  const stalled = await eventually("App team-b/api Stalled, reason Forbidden", async () => {
    const app = (await workloads.get("App", teamB, "api")) as App;
    return condition(app, "Stalled")?.reason === "Forbidden" ? app : undefined;
  });
  assert.match(condition(stalled, "Stalled")?.message ?? "", new RegExp(`User "system:serviceaccount:${teamB}:${defaultAccount}" cannot`));
  await grant(teamB, defaultAccount);
  await workloads.ready("App", teamB, "api", 60_000);
  const [deployment] = await children(teamB, "api");
  assert.ok(deployment, "its Deployment exists");
});

test("the drift repair writes as the ServiceAccount too: an addition to the Deployment is handed over and removed, which the operator's own rights could not", async () => {
  await cluster().apps.patchNamespacedDeployment({ name: "api", namespace: teamB, body: { spec: { template: { spec: { hostNetwork: true } } } }, fieldManager: "kubectl-patch" }, mergePatch);
  await eventWithReason(cluster().core, teamB, "api", "DriftRepaired", (text) => /server-side apply/.test(text));
  await eventually("hostNetwork gone from Deployment team-b/api", async () => ((await children(teamB, "api"))[0]?.spec?.template.spec?.hostNetwork ? undefined : true));
});

test("another namespace's ServiceAccount cannot be named: the API server refuses the object; kubectl explain describes the field", async () => {
  for (const name of [`system:serviceaccount:${teamB}:${defaultAccount}`, `${teamB}/${defaultAccount}`, "Deployer", "kube-system:default"]) {
    await assert.rejects(
      workloads.create({ kind: "App", metadata: { name: "elsewhere", namespace: teamA }, spec: spec({ serviceAccountName: name }) }),
      (error: unknown) => (error as { code?: number }).code === 422 && /spec\.serviceAccountName/.test(String((error as { body?: unknown }).body)),
      `spec.serviceAccountName ${name} refused`,
    );
  }
  const refused = await orUndefined(() => workloads.get("App", teamA, "elsewhere"));
  assert.equal(refused, undefined);
  // And kubectl explain says what the field is, for both kinds.
  for (const kind of ["app", "memcached"]) {
    const explained = execFileSync(toolPath("kubectl"), [`--kubeconfig=${cluster().cluster.kubeconfig}`, "explain", `${kind}.spec.serviceAccountName`], { encoding: "utf8", timeout: 30_000 });
    assert.match(explained.replace(/\s+/g, " "), /The ServiceAccount of this object's namespace whose rights .* A name only: a ServiceAccount of another namespace cannot be named/);
  }
});

test("deleting an App destroys its children as its ServiceAccount", async () => {
  await workloads.delete("App", teamA, "web");
  await workloads.gone("App", teamA, "web");
  const [deployment, service] = await children(teamA, "web");
  assert.equal(deployment, undefined);
  assert.equal(service, undefined);
});

test("an operator that may not impersonate: the object is Stalled Forbidden naming the operator's own user, and nothing is created", async () => {
  const rules = (operatorRules(undefined, true) as V1PolicyRule[]).filter((rule) => !rule.resources?.includes("serviceaccounts"));
  await rbac.replaceClusterRole({ name: "appstack-operator-tenancy-test", body: { metadata: { name: "appstack-operator-tenancy-test" }, rules } });
  await workloads.create({ kind: "App", metadata: { name: "late", namespace: teamB }, spec: spec() });
  const stalled = await eventually("App team-b/late Stalled, reason Forbidden", async () => {
    const app = (await workloads.get("App", teamB, "late")) as App;
    return condition(app, "Stalled")?.reason === "Forbidden" ? app : undefined;
  });
  assert.match(condition(stalled, "Stalled")?.message ?? "", new RegExp(`User "${operatorUser}" cannot impersonate resource "serviceaccounts"`));
  assert.deepEqual(await children(teamB, "late"), [undefined, undefined]);
});
