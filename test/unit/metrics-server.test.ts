// The metrics server of its own (operator/manager/metrics-server.ts, serving-cert.ts): HTTPS with a
// self-signed certificate made in memory or one from a Secret's folder, read again when it is
// rotated; each request through the authorizer (here a stand-in: test/e2e/metrics-auth.test.ts
// asks a real API server); plain HTTP where config.ts allows it.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { get as httpsGet } from "node:https";
import type { Server } from "node:http";
import { type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { X509Certificate } from "node:crypto";
import { test } from "node:test";
import { createLogger } from "../../operator/base/log.ts";
import { MetricsAuthorizer, type Reviews } from "../../operator/manager/metrics-auth.ts";
import { startMetricsServer } from "../../operator/manager/metrics-server.ts";
import { readCertificateDir, selfSignedCertificate, watchCertificateDir } from "../../operator/manager/serving-cert.ts";
import { OperatorMetrics } from "../../operator/manager/metrics.ts";
import { certificateAuthority, servingCertificate } from "../../toolchain/cluster/pki.ts";
import { responseOf } from "../../toolchain/cluster/readiness.ts";
import { httpGet } from "../helpers/http.ts";
import { eventually } from "../helpers/cluster.ts";

const log = createLogger({ level: "error" });
const registry = new OperatorMetrics(() => ({ depth: 0, active: 0 })).registry;
/** Lets the token `good` in, and nothing else. */
const reviews: Reviews = {
  authenticate: (token) => Promise.resolve(token === "good" ? { username: "prometheus" } : undefined),
  authorize: (user) => Promise.resolve(user.username === "prometheus"),
};
const portOf = (server: Server) => (server.address() as AddressInfo).port;
const close = (server: Server) => new Promise((resolve) => server.close(resolve));

test("a self-signed certificate for localhost and 127.0.0.1, made in memory: it verifies against itself", () => {
  const pair = selfSignedCertificate();
  const cert = new X509Certificate(pair.cert);
  assert.equal(cert.subject, "CN=appstack-metrics");
  assert.equal(cert.issuer, cert.subject);
  assert.match(cert.subjectAltName ?? "", /DNS:localhost/);
  assert.match(cert.subjectAltName ?? "", /IP Address:127\.0\.0\.1/);
  assert.ok(cert.verify(cert.publicKey));
});

test("HTTPS on its own port: a request without an allowed token gets no metrics, one with it does; another path is 404; plain HTTP gets nothing", async () => {
  const server = await startMetricsServer({ host: "127.0.0.1", port: 0, secure: true }, registry, log, new MetricsAuthorizer(reviews));
  try {
    const url = `https://127.0.0.1:${portOf(server)}`;
    const scrape = (path: string, token?: string) => responseOf(httpsGet, `${url}${path}`, { rejectUnauthorized: false, headers: token ? { authorization: `Bearer ${token}` } : {} });
    assert.equal((await scrape("/metrics")).status, 401);
    assert.equal((await scrape("/metrics", "bad")).status, 401);
    const allowed = await scrape("/metrics", "good");
    assert.equal(allowed.status, 200);
    assert.match(allowed.body, /^appstack_build_info\{/m);
    assert.equal((await scrape("/healthz", "good")).status, 404);
    const plain = await httpGet(`http://127.0.0.1:${portOf(server)}/metrics`).catch((error: unknown) => ({ status: 0, body: String(error) }));
    assert.ok(plain.status !== 200 && !plain.body.includes("appstack_"), JSON.stringify(plain));
  } finally {
    await close(server);
  }
});

test("a certificate from a Secret's folder is served and verifies against its CA; a rotated one is served without a restart", async () => {
  const dir = mkdtempSync(join(tmpdir(), "appstack-metrics-cert-"));
  const ca = certificateAuthority("metrics-ca");
  const write = (pair: { certPem: string; keyPem: string }) => {
    writeFileSync(join(dir, "tls.crt"), pair.certPem);
    writeFileSync(join(dir, "tls.key"), pair.keyPem);
  };
  const first = servingCertificate(ca, "first", { dns: ["localhost"], ips: ["127.0.0.1"] });
  write(first);
  const server = await startMetricsServer({ host: "127.0.0.1", port: 0, secure: true, certDir: dir }, registry, log, new MetricsAuthorizer(reviews), 50);
  try {
    const served = () => new Promise<string>((resolve, reject) => {
      const req = httpsGet({ host: "127.0.0.1", port: portOf(server), path: "/metrics", ca: ca.certPem, servername: "localhost", headers: { authorization: "Bearer good" }, agent: false }, (res) => {
        resolve(new X509Certificate((res.socket as import("node:tls").TLSSocket).getPeerX509Certificate()!.raw).subject);
        res.resume();
      });
      req.on("error", reject);
    });
    assert.equal(await served(), "CN=first");
    const second = servingCertificate(ca, "second", { dns: ["localhost"], ips: ["127.0.0.1"] });
    write(second);
    await eventually("the rotated certificate served", async () => ((await served()) === "CN=second" ? true : undefined), 30_000);
  } finally {
    await close(server);
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a half-written rotation (a key that is not the certificate's) is reported and the last pair kept", async () => {
  const dir = mkdtempSync(join(tmpdir(), "appstack-metrics-cert-"));
  try {
    const ca = certificateAuthority("metrics-ca");
    const one = servingCertificate(ca, "one", { dns: ["localhost"] });
    const other = servingCertificate(ca, "other", { dns: ["localhost"] });
    writeFileSync(join(dir, "tls.crt"), one.certPem);
    writeFileSync(join(dir, "tls.key"), other.keyPem);
    assert.throws(() => readCertificateDir(dir), /tls\.key is not the key of/);
    const changes: string[] = [];
    const failures: unknown[] = [];
    const stop = watchCertificateDir(dir, { cert: "", key: "" }, (pair) => changes.push(pair.cert), (error) => failures.push(error), 20);
    try {
      await eventually("the mismatch reported", async () => (failures.length > 0 ? true : undefined));
      assert.deepEqual(changes, []);
      writeFileSync(join(dir, "tls.key"), one.keyPem);
      await eventually("the matching pair taken", async () => (changes.length === 1 ? true : undefined));
      assert.equal(changes[0], one.certPem);
    } finally {
      stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("plain HTTP where config.ts allows it (a loopback address): no token asked", async () => {
  const server = await startMetricsServer({ host: "127.0.0.1", port: 0, secure: false }, registry, log);
  try {
    const response = await httpGet(`http://127.0.0.1:${portOf(server)}/metrics`);
    assert.equal(response.status, 200);
    assert.match(response.body, /^appstack_build_info\{/m);
  } finally {
    await close(server);
  }
});
