// The write fence of a sharded replica (docs/sharding.md): once its shard lease is not held by its
// own clock, no write of any client made from its KubeConfig is sent, whichever path it takes
// (typed clients, the object API of server-side applies, a client made after the fence), while
// reads go on. A stand-in API server records what reaches it.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { RbacAuthorizationV1Api } from "@kubernetes/client-node";
import yaml from "js-yaml";
import { apiClient, kubeClients, patchWorkload } from "../../operator/kube/clients.ts";
import { fenceWrites, WriteFenced } from "../../operator/kube/write-fence.ts";

/** A kubeconfig in `dir` for the stand-in API server `server`, over plain HTTP. */
function standInKubeconfig(dir: string, server: Server): string {
  const kubeconfig = join(dir, "kubeconfig");
  writeFileSync(kubeconfig, yaml.dump({
    apiVersion: "v1", kind: "Config", "current-context": "c",
    clusters: [{ name: "c", cluster: { server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, "insecure-skip-tls-verify": true } }],
    users: [{ name: "u", user: {} }],
    contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
  }));
  return kubeconfig;
}

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
  const clients = kubeClients(standInKubeconfig(dir, server));
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

test("a write in flight when the lease's time is up, and the lease not renewed, is aborted: it never lands after another replica may act", { timeout: 15_000 }, async (t) => {
  // A stand-in API server that takes the write and never answers: a stalled connection.
  let arrived: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (arrived = resolve));
  let closedByClient: () => void = () => undefined;
  const aborted = new Promise<void>((resolve) => (closedByClient = resolve));
  const server = createServer((request) => {
    request.on("close", closedByClient);
    arrived();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const dir = mkdtempSync(join(tmpdir(), "appstack-fence-"));
  t.after(() => {
    server.closeAllConnections();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const clients = kubeClients(standInKubeconfig(dir, server));
  let holdsLease = true;
  let checks = 0;
  let renewalsSeen: () => void = () => undefined;
  const renewed = new Promise<void>((resolve) => (renewalsSeen = resolve));
  // Renewed every 50 ms while held: the checks at each expiry find it held and wait on.
  const fenced = () => {
    if (++checks === 4) renewalsSeen();
    return holdsLease ? undefined : "this replica no longer holds its shard lease";
  };
  fenceWrites(clients.config, { fenced, remainingMs: () => (holdsLease ? 50 : 0) });
  let settled = false;
  const write = patchWorkload(clients, { kind: "App", namespace: "default", name: "web" }, [{ op: "add", path: "/status", value: {} }], "status").finally(() => (settled = true));
  await held;
  // Sent while held, and still in flight over three renewals (the send's check, then one per expiry): not aborted for those.
  await renewed;
  assert.equal(settled, false, "a write in flight while the lease is renewed goes on");
  holdsLease = false;
  await assert.rejects(write, (error: unknown) => error instanceof WriteFenced && /PATCH aborted in flight: this replica no longer holds its shard lease/.test(error.message));
  await aborted;
});
