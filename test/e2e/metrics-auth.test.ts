// Who reads the operator's /metrics, against a real API server that authorizes with RBAC
// (docs/security.md#metrics). The operator runs as a ServiceAccount of its own holding exactly the
// install's rules (components/install.ts operatorRules, components/metrics-access.ts), from a
// kubeconfig that names its token file, and serves /metrics on an address of its own over HTTPS.
// Each scraper is a ServiceAccount with a token from the TokenRequest API, as Prometheus's is: no
// token or a bad one gets 401, one not bound to the reader ClusterRole 403, one bound to it the
// metrics. Plain HTTP on any address but loopback is refused at start.
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { RbacAuthorizationV1Api, type CoreV1Api, type V1PolicyRule } from "@kubernetes/client-node";
import { operatorRules } from "../../components/install.ts";
import { metricsAuthRules, metricsReaderRules } from "../../components/metrics-access.ts";
import { installApi } from "../../operator/kube/apply.ts";
import { kubeClients } from "../../operator/kube/clients.ts";
import { freeLoopbackPorts } from "../../toolchain/cluster/ports.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { eventually, useCluster } from "../helpers/cluster.ts";
import { httpGet } from "../helpers/http.ts";
import { httpsGet, scraperToken } from "../helpers/metrics-reader.ts";
import { disposeOperator, startOperatorProcess, type OperatorProcess } from "../helpers/operator.ts";
import { serviceAccountKubeconfig } from "../helpers/service-account-kubeconfig.ts";

const operatorNamespace = "appstack-system";
const operatorAccount = "appstack-operator";
const readerRole = "appstack-operator-test-metrics-reader";
const scratch = mkdtempSync(join(tmpdir(), "appstack-metrics-auth-test-"));

let operator: OperatorProcess | undefined;
let metricsPort = 0;
let rbac: RbacAuthorizationV1Api;

/** A ClusterRole of `rules` bound to the ServiceAccount `namespace/account`. */
async function bindClusterRole(name: string, rules: V1PolicyRule[], namespace: string, account: string): Promise<void> {
  await rbac.createClusterRole({ body: { metadata: { name }, rules } });
  await rbac.createClusterRoleBinding({ body: { metadata: { name }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name }, subjects: [{ kind: "ServiceAccount", name: account, namespace }] } });
}

/** The operator's identity: its ServiceAccount with the install's rules and the metrics reviews, and a kubeconfig naming a token file. */
async function operatorKubeconfig(adminKubeconfig: string, core: CoreV1Api): Promise<string> {
  await core.createNamespace({ body: { metadata: { name: operatorNamespace } } });
  await core.createNamespacedServiceAccount({ namespace: operatorNamespace, body: { metadata: { name: operatorAccount } } });
  await bindClusterRole("appstack-operator-test", operatorRules() as V1PolicyRule[], operatorNamespace, operatorAccount);
  await bindClusterRole("appstack-operator-test-metrics-auth", metricsAuthRules, operatorNamespace, operatorAccount);
  return serviceAccountKubeconfig(core, adminKubeconfig, operatorNamespace, operatorAccount, scratch);
}

const cluster = useCluster(
  async ({ cluster: local, core }) => {
    rbac = loadKubeConfig(local.kubeconfig).makeApiClient(RbacAuthorizationV1Api);
    await installApi(kubeClients(local.kubeconfig), { operatorUsers: [`system:serviceaccount:${operatorNamespace}:${operatorAccount}`] });
    const kubeconfig = await operatorKubeconfig(local.kubeconfig, core);
    await rbac.createClusterRole({ body: { metadata: { name: readerRole }, rules: metricsReaderRules } });
    await core.createNamespace({ body: { metadata: { name: "monitoring" } } });
    metricsPort = (await freeLoopbackPorts(1))[0]!;
    operator = await startOperatorProcess(kubeconfig, { installApi: false, env: { APPSTACK_LEADER_ELECT: "false", APPSTACK_METRICS_ADDR: `127.0.0.1:${metricsPort}` } });
    await eventually("the operator ready", async () => ((await httpGet(`http://127.0.0.1:${operator!.healthPort}/readyz`)).status === 200 ? true : undefined));
  },
  async () => {
    await disposeOperator(operator);
    rmSync(scratch, { recursive: true, force: true });
  },
);

const scrape = (token?: string) => httpsGet(`https://127.0.0.1:${metricsPort}/metrics`, token);

test("no token, or one the API server does not authenticate: 401, and no metrics", async () => {
  const none = await scrape();
  assert.equal(none.status, 401, none.body);
  const forged = await scrape("eyJhbGciOiJSUzI1NiJ9.e30.c2lnbmF0dXJl");
  assert.equal(forged.status, 401, forged.body);
  assert.doesNotMatch(none.body + forged.body, /appstack_/);
});

test("a ServiceAccount's token without a binding to the reader ClusterRole: 403, naming the user", async () => {
  const token = await scraperToken(cluster().cluster.kubeconfig, "monitoring", "stranger");
  const response = await scrape(token);
  assert.equal(response.status, 403, response.body);
  assert.match(response.body, /Authorization denied for user system:serviceaccount:monitoring:stranger/);
  assert.doesNotMatch(response.body, /appstack_/);
});

test("a ServiceAccount bound to the reader ClusterRole (get on /metrics): 200 and the metrics", async () => {
  const token = await scraperToken(cluster().cluster.kubeconfig, "monitoring", "prometheus", readerRole);
  // A binding just made: the API server's authorizer sees it once its informer has it.
  const response = await eventually("the bound scraper let in", async () => {
    const answer = await scrape(token);
    return answer.status === 200 ? answer : undefined;
  });
  assert.match(response.body, /^appstack_build_info\{version="[^"]+",node_version="v\d+/m);
  assert.match(response.body, /^appstack_queue_depth 0$/m);
});

test("the probes stay plain HTTP for the kubelet, and the health port no longer serves /metrics", async () => {
  assert.equal((await httpGet(`http://127.0.0.1:${operator!.healthPort}/healthz`)).status, 200);
  assert.equal((await httpGet(`http://127.0.0.1:${operator!.healthPort}/metrics`)).status, 404);
  // Plain HTTP to the HTTPS port gets nothing.
  const plain = await httpGet(`http://127.0.0.1:${metricsPort}/metrics`).catch((error: unknown) => ({ status: 0, body: String(error) }));
  assert.ok(plain.status !== 200 && !plain.body.includes("appstack_"), JSON.stringify(plain));
});

test("plain HTTP on an address other than loopback is refused at start: the operator exits and says why", async () => {
  const [port] = await freeLoopbackPorts(1);
  const refusals: Record<string, string>[] = [{ APPSTACK_METRICS_ADDR: `0.0.0.0:${port}`, APPSTACK_METRICS_SECURE: "false" }, { APPSTACK_HEALTH_ADDR: `0.0.0.0:${port}` }];
  for (const env of refusals) {
    const refused = await startOperatorProcess(cluster().cluster.kubeconfig, { installApi: false, env: { APPSTACK_LEADER_ELECT: "false", ...env } });
    try {
      const code = refused.child.exitCode ?? ((await once(refused.child, "exit"))[0] as number | null);
      assert.notEqual(code, 0);
      assert.match(readFileSync(refused.logFile, "utf8"), /only on a loopback address/);
      await assert.rejects(httpGet(`http://127.0.0.1:${port}/metrics`), "nothing listens");
    } finally {
      await disposeOperator(refused);
    }
  }
});
