// Every Kubernetes API request has a deadline: against a server that accepts the connection and
// never answers (a hung API server, or a stalled proxy in front of one), the call fails in time.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import yaml from "js-yaml";
import { kubeClients } from "../../operator/kube/clients.ts";

test("an API request to a server that never answers fails after its deadline", { timeout: 15_000 }, async () => {
  const server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const dir = mkdtempSync(join(tmpdir(), "appstack-deadline-"));
  try {
    const kubeconfig = join(dir, "kubeconfig");
    const { port } = server.address() as AddressInfo;
    writeFileSync(kubeconfig, yaml.dump({
      apiVersion: "v1", kind: "Config", "current-context": "hung",
      clusters: [{ name: "hung", cluster: { server: `http://127.0.0.1:${port}`, "insecure-skip-tls-verify": true } }],
      users: [{ name: "nobody", user: {} }],
      contexts: [{ name: "hung", context: { cluster: "hung", user: "nobody" } }],
    }));
    const clients = kubeClients(kubeconfig, 500);
    const started = Date.now();
    // Without a deadline the call would never settle: the test's own clock ends it (and fails it).
    const outcome = await Promise.race([
      clients.core.readNamespace({ name: "default" }).then(() => "answered", (error: unknown) => String(error)),
      new Promise<string>((resolve) => setTimeout(() => resolve("still waiting after 5 s"), 5_000).unref()),
    ]);
    const elapsed = Date.now() - started;
    assert.match(outcome, /abort|timeout/i);
    assert.ok(elapsed >= 450 && elapsed < 5_000, `failed after ${elapsed} ms`);
  } finally {
    server.closeAllConnections();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
