// A person of a team, as the API server knows them: a user with a Role in one namespace and no
// other rights, who runs `kubectl appstack` with nothing but a kubeconfig (through impersonation,
// kubectl's `--as`, from the cluster's admin kubeconfig) and no appstack setting in the environment.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeConfig, V1PolicyRule } from "@kubernetes/client-node";
import { RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { toolPath } from "../../toolchain/tools.ts";
import type { CliResult } from "./operator.ts";

/** What a team member may do with the objects of their namespace: read and edit them, not approve their plans. */
export const teamRules: V1PolicyRule[] = [{ apiGroups: ["appstack.dev"], resources: ["apps", "memcacheds"], verbs: ["get", "list", "patch"] }];

/** A team member who may also approve plans: the RBAC verb approve (crds/approval.ts) besides patch, which writes the approval. */
export const approverRules: V1PolicyRule[] = [{ apiGroups: ["appstack.dev"], resources: ["apps", "memcacheds"], verbs: ["get", "list", "patch", "approve"] }];

/** Gives `user` `rules` in `namespace`, and nothing else. */
export async function grantPerson(kc: KubeConfig, user: string, namespace: string, rules: V1PolicyRule[] = teamRules): Promise<void> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const name = `appstack-person-${user}`;
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name }, rules } });
  await rbac.createNamespacedRoleBinding({ namespace, body: { metadata: { name }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name }, subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }] } });
}

/**
 * `kubectl appstack ARGS --as USER`, the plugin from `pluginBin` (plugin-bin.ts), with only PATH
 * and the kubeconfig in the environment: no state folder, backend URL or passphrase.
 */
export function appstackAs(kubeconfig: string, pluginBin: string, user: string, ...args: string[]): Promise<CliResult> {
  return kubectlAs(kubeconfig, user, ["appstack", ...args], pluginBin);
}

/** The pinned `kubectl ARGS --as USER` (`kubectl annotate`, say), with `pluginBin`, if any, first on PATH. */
export function kubectlAs(kubeconfig: string, user: string, args: readonly string[], pluginBin?: string): Promise<CliResult> {
  // A home of its own, empty: no ~/.kube, ~/.pulumi or appstack state of this machine's.
  const home = mkdtempSync(join(tmpdir(), "appstack-person-"));
  const path = [...(pluginBin ? [pluginBin] : []), process.env["PATH"] ?? ""].join(":");
  return new Promise((resolve) => {
    execFile(toolPath("kubectl"), [...args, `--as=${user}`], { env: { PATH: path, KUBECONFIG: kubeconfig, HOME: home }, timeout: 120_000, encoding: "utf8" }, (error, stdout, stderr) => {
      rmSync(home, { recursive: true, force: true });
      resolve({ status: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

/**
 * The checks of an install, wherever its state is (a volume in the operator's pod, a database):
 * `user`, given a Role in `namespace` only, reads the App `app`'s history (its creation first) and
 * the namespace's status with nothing but the kubeconfig, and is refused in `elsewhere`.
 */
export async function assertReadsThroughRbac(kc: KubeConfig, kubeconfig: string, pluginBin: string, user: string, namespace: string, app: string, elsewhere: string): Promise<void> {
  await grantPerson(kc, user, namespace);
  const history = await appstackAs(kubeconfig, pluginBin, user, "history", `app/${app}`, "-n", namespace, "-o", "json");
  assert.equal(history.status, 0, history.stderr);
  const rows = JSON.parse(history.stdout) as { operation: string; result: string; why?: string }[];
  assert.deepEqual([rows[0]?.operation, rows[0]?.result, rows[0]?.why], ["update", "succeeded", "created"], history.stdout);
  const status = await appstackAs(kubeconfig, pluginBin, user, "status", "-n", namespace);
  assert.ok(status.status === 0 || status.status === 3, status.stderr);
  assert.match(status.stdout, new RegExp(`\\b${app}\\b`));
  const refused = await appstackAs(kubeconfig, pluginBin, user, "history", `app/${app}`, "-n", elsewhere);
  assert.equal(refused.status, 1, refused.stdout);
  assert.match(refused.stderr, new RegExp(`HTTP 403: .*User "${user}" cannot get resource "apps" in API group "appstack.dev" in the namespace "${elsewhere}"`));
}
