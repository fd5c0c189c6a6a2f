// Tenant identities without a cluster: which user an object acts as, the setting, the engines'
// kubeconfig (the operator's credentials by reference only) and the install's rules.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import yaml from "js-yaml";
import { operatorRules } from "../../components/install.ts";
import type { Workload } from "../../crds/types.ts";
import { actingUser, isForbidden } from "../../operator/controller/tenancy.ts";
import { connectionFromKubeconfig, impersonatingKubeconfig, inClusterConnection } from "../../operator/kube/engine-kubeconfig.ts";
import { loadConfig } from "../../operator/manager/config.ts";

const folder = mkdtempSync(join(tmpdir(), "appstack-tenancy-unit-"));
after(() => rmSync(folder, { recursive: true, force: true }));

const app = (serviceAccountName?: string) => ({ kind: "App", metadata: { name: "web", namespace: "team-a", uid: "u" }, spec: { image: "nginx", replicas: 1, ...(serviceAccountName ? { serviceAccountName } : {}) } }) as unknown as Workload;

test("an object acts as its ServiceAccount, else the install's default, always of its own namespace; off, as the operator", () => {
  const tenancy = { defaultServiceAccount: "appstack-tenant" };
  assert.equal(actingUser(app("deployer"), tenancy), "system:serviceaccount:team-a:deployer");
  assert.equal(actingUser(app(), tenancy), "system:serviceaccount:team-a:appstack-tenant");
  assert.equal(actingUser(app("deployer"), undefined), undefined);
  assert.ok(isForbidden('deployments.apps "web" is forbidden: User "system:serviceaccount:team-a:deployer" cannot patch resource "deployments"'));
  assert.ok(!isForbidden("connection refused"));
});

test("the setting turns tenant identities on with a ServiceAccount's name, and refuses anything else", () => {
  const env = { APPSTACK_STATE_DIR: folder, APPSTACK_PASSPHRASE: "p" };
  assert.equal(loadConfig({}, env).defaultServiceAccount, undefined);
  assert.equal(loadConfig({}, { ...env, APPSTACK_DEFAULT_SERVICE_ACCOUNT: "appstack-tenant" }).defaultServiceAccount, "appstack-tenant");
  assert.equal(loadConfig({ "default-service-account": "deployer" }, { ...env, APPSTACK_DEFAULT_SERVICE_ACCOUNT: "x" }).defaultServiceAccount, "deployer");
  for (const bad of ["system:serviceaccount:kube-system:default", "kube-system/default", "Deployer"]) {
    assert.throws(() => loadConfig({}, { ...env, APPSTACK_DEFAULT_SERVICE_ACCOUNT: bad }), /default service account must be the name of a ServiceAccount/);
  }
});

test("the engines' kubeconfig names the operator's credentials by reference, with `as`, and one that embeds them is refused", () => {
  const file = join(folder, "kubeconfig");
  const kubeconfig = (user: Record<string, unknown>) => yaml.dump({
    clusters: [{ name: "c", cluster: { server: "https://10.0.0.1:6443", "certificate-authority": "ca.crt" } }],
    users: [{ name: "u", user }],
    contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
    "current-context": "x",
  });
  const connection = connectionFromKubeconfig(file, kubeconfig({ "token-file": "token", as: "someone-else" }));
  assert.deepEqual(connection, { cluster: { server: "https://10.0.0.1:6443", "certificate-authority": join(folder, "ca.crt") }, user: { tokenFile: join(folder, "token") } });
  const engine = yaml.load(impersonatingKubeconfig(connection, "system:serviceaccount:team-a:deployer")) as { users: { user: Record<string, unknown> }[]; "current-context": string };
  assert.deepEqual(engine.users[0]!.user, { tokenFile: join(folder, "token"), as: "system:serviceaccount:team-a:deployer" });
  assert.deepEqual(connectionFromKubeconfig(file, kubeconfig({ "client-certificate": "/pki/op.crt", "client-key": "/pki/op.key" })).user, { "client-certificate": "/pki/op.crt", "client-key": "/pki/op.key" });
  for (const embedded of [{ token: "secret" }, { "client-certificate-data": "Y2VydA==", "client-key-data": "a2V5" }, { username: "u", password: "p" }]) {
    assert.throws(() => connectionFromKubeconfig(file, kubeconfig(embedded)), /credentials by reference/);
  }
  assert.deepEqual(inClusterConnection({ KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" }), {
    cluster: { server: "https://10.96.0.1:443", "certificate-authority": "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt" },
    user: { tokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token" },
  });
});

test("with tenant identities, the install's rules read the children and impersonate ServiceAccounts, never write the children", () => {
  const rules = operatorRules(undefined, true) as { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  const verbsOn = (resource: string) => rules.filter((rule) => rule.resources.includes(resource)).flatMap((rule) => rule.verbs);
  assert.deepEqual(verbsOn("deployments"), ["get", "list", "watch"]);
  assert.deepEqual(verbsOn("services"), ["get", "list", "watch"]);
  assert.deepEqual(verbsOn("serviceaccounts"), ["impersonate"]);
  assert.deepEqual(verbsOn("apps/finalizers"), []);
  const off = operatorRules() as { resources: string[]; verbs: string[] }[];
  assert.ok(!off.some((rule) => rule.resources.includes("serviceaccounts")), "off: no impersonation");
});
