// The sharder's cache with a list of namespaces, one of which answers 403 (deleted, or its
// RoleBinding gone): the others' objects are still there to place, and the namespace's own come
// back once it is readable again.
import assert from "node:assert/strict";
import { test } from "node:test";
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { defaultGroup as group, version } from "../../crds/types.ts";
import type { Logger } from "../../operator/base/log.ts";
import { apiClient, type KubeClients } from "../../operator/kube/clients.ts";
import { ChildObjectApi } from "../../operator/kube/child-apis.ts";
import { WorkloadCache } from "../../operator/manager/workload-cache.ts";
import { eventually } from "../helpers/cluster.ts";
import { silentServer } from "../helpers/silent-api-server.ts";

const warnings: string[] = [];
const log = { info: () => undefined, warn: (message: string) => void warnings.push(message), error: () => undefined, debug: () => undefined } as unknown as Logger;

function app(namespace: string, name: string) {
  return { apiVersion: `${group}/${version}`, kind: "App", metadata: { name, namespace, uid: `${namespace}-${name}`, resourceVersion: "3" }, spec: { image: "nginx" } };
}

test("a watched namespace that answers 403 leaves the others' objects placeable, and rejoins when readable", { timeout: 30_000 }, async () => {
  let teamBReadable = false;
  const server = await silentServer((res, url) => {
    const [, namespace, plural] = /\/namespaces\/([^/]+)\/([^/]+)$/.exec(url.pathname) ?? [];
    if (namespace === "team-b" && !teamBReadable) {
      res.writeHead(403, { "content-type": "application/json" });
      res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", reason: "Forbidden", code: 403, message: `${plural} is forbidden in namespace team-b` }));
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    // A watch is accepted and then silent; a list answers at once.
    if (url.searchParams.get("watch") === "true") return void res.flushHeaders();
    const items = plural === "apps" ? [app(namespace ?? "", "web")] : [];
    res.end(JSON.stringify({ apiVersion: `${group}/${version}`, kind: "List", metadata: { resourceVersion: "3" }, items }));
  });
  const clients: KubeClients = { config: server.config, core: apiClient(server.config, CoreV1Api), apps: apiClient(server.config, AppsV1Api), custom: apiClient(server.config, CustomObjectsApi), objects: apiClient(server.config, ChildObjectApi) };
  const cache = new WorkloadCache({ clients, namespaces: ["team-a", "team-b"], watchTimeoutMs: 60_000, log });
  try {
    cache.start(() => undefined);
    const placeable = await eventually("the cache to answer despite team-b's 403", async () => cache.objects("App"), 10_000);
    assert.deepEqual(placeable.map((object) => `${object.metadata.namespace}/${object.metadata.name}`), ["team-a/web"]);
    assert.ok(warnings.some((warning) => warning.includes("cannot read a watched namespace")), warnings.join("\n"));
    // Readable again: its informers' next try (the reconciler's backoff, 3 s at first) lists it.
    teamBReadable = true;
    const all = await eventually("team-b's App back in the cache", async () => {
      const objects = cache.objects("App") ?? [];
      return objects.length === 2 ? objects : undefined;
    }, 15_000);
    assert.deepEqual(all.map((object) => `${object.metadata.namespace}/${object.metadata.name}`).sort(), ["team-a/web", "team-b/web"]);
    assert.ok(all.every((object) => object.kind === "App"));
  } finally {
    await cache.stop();
    server.close();
  }
});
