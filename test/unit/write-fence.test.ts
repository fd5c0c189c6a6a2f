// The write fence of a sharded replica (docs/sharding.md): once its shard lease is not held by its
// own clock, no write of any client made from its KubeConfig is sent, whichever path it takes
// (typed clients, the object API of server-side applies, a client made after the fence), while
// reads go on. A stand-in API server records what reaches it.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { RbacAuthorizationV1Api } from "@kubernetes/client-node";
import yaml from "js-yaml";
import { apiClient, fenceWrites, kubeClients, patchWorkload, WriteFenced } from "../../operator/kube/clients.ts";

test("a fenced KubeConfig sends no write through any of its clients, and every read", { timeout: 15_000 }, async (t) => {
  const received: string[] = [];
  const server = createServer((request, response) => {
    received.push(`${request.method} ${request.url?.split("?")[0]}`);
    request.resume();
    response.setHeader("Content-Type", "application/json");
    response.end(JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const dir = mkdtempSync(join(tmpdir(), "appstack-fence-"));
  t.after(() => {
    server.closeAllConnections();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const kubeconfig = join(dir, "kubeconfig");
  writeFileSync(kubeconfig, yaml.dump({
    apiVersion: "v1", kind: "Config", "current-context": "c",
    clusters: [{ name: "c", cluster: { server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, "insecure-skip-tls-verify": true } }],
    users: [{ name: "u", user: {} }],
    contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
  }));
  const clients = kubeClients(kubeconfig);
  let holdsLease = true;
  fenceWrites(clients.config, () => (holdsLease ? undefined : "this replica no longer holds its shard lease"));

  await patchWorkload(clients, { kind: "App", namespace: "default", name: "web" }, [{ op: "add", path: "/status", value: {} }], "status");
  assert.deepEqual(received, ["PATCH /apis/appstack.dev/v1alpha1/namespaces/default/apps/web/status"], "held: writes go out");

  holdsLease = false;
  received.length = 0;
  await assert.rejects(patchWorkload(clients, { kind: "App", namespace: "default", name: "web" }, [{ op: "add", path: "/status", value: {} }], "status"), WriteFenced);
  await assert.rejects(clients.core.createNamespacedEvent({ namespace: "default", body: { metadata: { name: "e" }, involvedObject: {} } }), /POST not sent: this replica no longer holds its shard lease/);
  await assert.rejects(clients.apps.deleteNamespacedDeployment({ namespace: "default", name: "web" }), WriteFenced);
  // A client made afterwards from the same KubeConfig (binding-guard.ts, apply.ts make their own).
  await assert.rejects(apiClient(clients.config, RbacAuthorizationV1Api).createNamespacedRoleBinding({ namespace: "default", body: { roleRef: { apiGroup: "", kind: "Role", name: "r" } } }), WriteFenced);
  await clients.core.readNamespace({ name: "default" });
  assert.deepEqual(received, ["GET /api/v1/namespaces/default"], "lapsed: only the read reached the API server");
});
