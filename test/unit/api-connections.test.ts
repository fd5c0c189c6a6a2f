// The operator's API calls reuse their TLS connections (operator/kube/connection-pool.ts), against a
// local HTTPS server that counts handshakes and asks for a client certificate, as the API server
// does. What reuse must not cost: the server's certificate is verified against the CA the
// kubeconfig names now, a rotated client certificate or service-account token is sent, a
// connection idle for too long is not handed out again, the connections are bounded, and a watch
// keeps a connection of its own.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, mock, test } from "node:test";
import type { TLSSocket } from "node:tls";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import yaml from "js-yaml";
import { apiClient } from "../../operator/kube/clients.ts";
import { BoundedWatch } from "../../operator/kube/bounded-watch.ts";
import { ConnectionPool } from "../../operator/kube/connection-pool.ts";
import { clientCertificate, createClusterPki } from "../../toolchain/cluster/pki.ts";

const pki = createClusterPki("10.0.0.1");
const otherCa = createClusterPki("10.0.0.1").ca;
const dir = mkdtempSync(join(tmpdir(), "appstack-api-connections-"));

interface Seen {
  readonly path: string;
  /** The client certificate's common name, when it presented one the CA signed. */
  readonly commonName: string | undefined;
  readonly authorization: string | undefined;
}

/** An API server on loopback: it counts TLS handshakes, records who asked what, holds `/slow` namespaces 600 ms and answers watches with silence. */
const seen: Seen[] = [];
let handshakes = 0;
let busy = 0;
let mostBusy = 0;
const closed: Promise<void>[] = [];
const server: Server = createServer({ cert: pki.apiserver.certPem, key: pki.apiserver.keyPem, ca: pki.ca.certPem, requestCert: true, rejectUnauthorized: false }, (req, res) => {
  const socket = req.socket as TLSSocket;
  seen.push({ path: req.url ?? "", commonName: socket.authorized ? String(socket.getPeerCertificate().subject.CN) : undefined, authorization: req.headers.authorization });
  if (req.url?.includes("watch=true")) return void res.writeHead(200, { "content-type": "application/json" }).flushHeaders();
  busy += 1;
  mostBusy = Math.max(mostBusy, busy);
  const name = /namespaces\/([^/?]+)/.exec(req.url ?? "")?.[1] ?? "";
  setTimeout(() => {
    busy -= 1;
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name } }));
  }, name.startsWith("slow") ? 600 : 0);
});
server.on("secureConnection", (socket: Socket) => {
  handshakes += 1;
  closed.push(new Promise((resolve) => socket.once("close", () => resolve())));
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const serverUrl = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;

after(() => {
  server.closeAllConnections();
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

function reset(): void {
  seen.length = 0;
  handshakes = 0;
  mostBusy = 0;
}

/** A kubeconfig whose CA, client certificate and key are files (so that they can rotate), as the operator loads one. */
function kubeconfigWithFiles(name: string): { config: KubeConfig; files: { ca: string; cert: string; key: string } } {
  const files = { ca: join(dir, `${name}-ca.crt`), cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
  writeFileSync(files.ca, pki.ca.certPem);
  writeFileSync(files.cert, pki.admin.certPem);
  writeFileSync(files.key, pki.admin.keyPem);
  const path = join(dir, `${name}.kubeconfig`);
  writeFileSync(path, yaml.dump({
    apiVersion: "v1", kind: "Config", "current-context": name,
    clusters: [{ name, cluster: { server: serverUrl, "certificate-authority": files.ca } }],
    users: [{ name, user: { "client-certificate": files.cert, "client-key": files.key } }],
    contexts: [{ name, context: { cluster: name, user: name } }],
  }));
  const config = new KubeConfig();
  config.loadFromFile(path);
  return { config, files };
}

async function readNamespaces(core: CoreV1Api, names: string[]): Promise<void> {
  for (const name of names) assert.equal((await core.readNamespace({ name })).metadata?.name, name);
}

const tenNames = Array.from({ length: 10 }, (_, i) => `ns-${i}`);

test("ten sequential API calls make one TLS handshake, each presenting the kubeconfig's client certificate", async () => {
  reset();
  const core = apiClient(kubeconfigWithFiles("sequential").config, CoreV1Api);
  await readNamespaces(core, tenNames);
  assert.equal(seen.length, 10);
  assert.ok(seen.every((s) => s.commonName === "appstack-admin"), JSON.stringify(seen));
  assert.equal(handshakes, 1, `${handshakes} TLS handshakes for 10 calls`);
});

test("the API clients of one kubeconfig share their connections", async () => {
  reset();
  const { config } = kubeconfigWithFiles("shared");
  await readNamespaces(apiClient(config, CoreV1Api), ["a"]);
  await readNamespaces(apiClient(config, CoreV1Api), ["b"]);
  assert.equal(handshakes, 1);
});

test("a CA changed on disk applies to the next call: a server it does not sign is refused, not reached over the open connection", async () => {
  reset();
  const { config, files } = kubeconfigWithFiles("ca-change");
  const core = apiClient(config, CoreV1Api);
  await readNamespaces(core, ["before"]);
  writeFileSync(files.ca, otherCa.certPem);
  await assert.rejects(core.readNamespace({ name: "after" }), /certificate/i);
  assert.deepEqual(seen.map((s) => s.path.split("/").pop()), ["before"]);
});

test("a client certificate rotated on disk is presented on the next call, over a new connection", async () => {
  reset();
  const { config, files } = kubeconfigWithFiles("rotation");
  const core = apiClient(config, CoreV1Api);
  await readNamespaces(core, ["one", "two"]);
  const rotated = clientCertificate(pki.ca, { commonName: "appstack-rotated", organization: "system:masters" });
  writeFileSync(files.cert, rotated.certPem);
  writeFileSync(files.key, rotated.keyPem);
  await readNamespaces(core, ["three", "four"]);
  assert.deepEqual(seen.map((s) => s.commonName), ["appstack-admin", "appstack-admin", "appstack-rotated", "appstack-rotated"]);
  assert.equal(handshakes, 2);
});

test("in the cluster, a rotated service-account token is sent over the kept connection once client-node reads it again (every 60 s)", async () => {
  reset();
  const prefix = join(dir, "in-cluster");
  const secrets = join(prefix, "var/run/secrets/kubernetes.io/serviceaccount");
  mkdirSync(secrets, { recursive: true });
  writeFileSync(join(secrets, "ca.crt"), pki.ca.certPem);
  writeFileSync(join(secrets, "token"), "token-one");
  const { hostname, port } = new URL(serverUrl);
  const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
  process.env.KUBERNETES_SERVICE_HOST = hostname;
  process.env.KUBERNETES_SERVICE_PORT = port;
  const config = new KubeConfig();
  try {
    config.loadFromCluster(prefix);
  } finally {
    process.env.KUBERNETES_SERVICE_HOST = saved.host;
    process.env.KUBERNETES_SERVICE_PORT = saved.port;
  }
  // The token is the only credential here: the server asks for a certificate but gets none.
  const core = apiClient(config, CoreV1Api);
  mock.timers.enable({ apis: ["Date"], now: Date.now() });
  try {
    await readNamespaces(core, ["first"]);
    writeFileSync(join(secrets, "token"), "token-two");
    mock.timers.tick(61_000);
    await readNamespaces(core, ["second"]);
  } finally {
    mock.timers.reset();
  }
  assert.deepEqual(seen.map((s) => s.authorization), ["Bearer token-one", "Bearer token-two"]);
  assert.equal(handshakes, 1);
});

test("a connection idle past the pool's limit is closed, and the next call opens a new one; a slower answer is not cut", async () => {
  reset();
  const idleMs = 300;
  const core = apiClient(kubeconfigWithFiles("idle").config, CoreV1Api, 5_000, new ConnectionPool({ maxSockets: 4, idleMs }));
  const before = closed.length;
  // Twice the idle limit in flight: the limit is for unused connections only.
  await readNamespaces(core, ["slow-one"]);
  assert.equal(closed.length, before + 1);
  await closed[before];
  await readNamespaces(core, ["after-idle"]);
  assert.equal(handshakes, 2);
});

test("calls at once open at most maxSockets connections; the rest wait for one", async () => {
  reset();
  const core = apiClient(kubeconfigWithFiles("bounded").config, CoreV1Api, 5_000, new ConnectionPool({ maxSockets: 2, idleMs: 5_000 }));
  // Chunked answers, as the API server's larger ones are: a request that waited in the agent for
  // a socket would fail them with a false "Premature close" (node-fetch issue 1767).
  const names = Array.from({ length: 6 }, (_, i) => `slow-${i}`);
  await Promise.all(names.map((name) => core.readNamespace({ name })));
  assert.equal(seen.length, 6);
  assert.equal(handshakes, 2);
  assert.equal(mostBusy, 2);
});

test("a request that waits for a connection still fails at its own deadline", async () => {
  reset();
  const { config } = kubeconfigWithFiles("waiting");
  const pool = new ConnectionPool({ maxSockets: 1, idleMs: 5_000 });
  const patient = apiClient(config, CoreV1Api, 5_000, pool);
  const hurried = apiClient(config, CoreV1Api, 200, pool);
  const holding = patient.readNamespace({ name: "slow-holder" });
  const started = Date.now();
  await assert.rejects(hurried.readNamespace({ name: "never-sent" }), /timeout|abort/i);
  const waited = Date.now() - started;
  assert.ok(waited >= 150 && waited < 550, `gave up after ${waited} ms`);
  assert.equal((await holding).metadata?.name, "slow-holder");
  assert.deepEqual(seen.map((s) => s.path.split("/").pop()), ["slow-holder"]);
});

test("a watch has a connection of its own, outside the pool: ending it leaves the API calls' connection open", async () => {
  reset();
  const { config } = kubeconfigWithFiles("watch");
  const core = apiClient(config, CoreV1Api);
  await readNamespaces(core, ["before-watch"]);
  const watch = new BoundedWatch(config, { timeoutMs: 60_000, graceMs: 1_000 });
  let done!: (error: unknown) => void;
  const ended = new Promise<unknown>((resolve) => (done = resolve));
  // Resolves once the server has answered the watch (200, then silence).
  await watch.watch("/api/v1/namespaces", {}, () => undefined, done);
  assert.ok(seen.some((s) => s.path.includes("watch=true")));
  assert.equal(handshakes, 2);
  watch.close();
  await ended;
  await readNamespaces(core, ["after-watch"]);
  assert.equal(handshakes, 2);
  assert.equal(seen.filter((s) => !s.path.includes("watch=true")).length, 2);
});
