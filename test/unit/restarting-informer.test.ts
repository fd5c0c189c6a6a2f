// An informer that fails starts again after the pause its owner chose, and not after it is stopped.
import assert from "node:assert/strict";
import { mock, test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { RestartingInformer, type FailurePhase, type RestartingInformerSettings } from "../../operator/kube/restarting-informer.ts";
import { silentServer } from "../helpers/silent-api-server.ts";

const configMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings", namespace: "team", resourceVersion: "5" } };
const aList = { metadata: { resourceVersion: "5" }, items: [configMap] };

/** An informer on the team's ConfigMaps at `server`, its list counted in `counter.lists`. */
function configMapInformer(
  server: Awaited<ReturnType<typeof silentServer>>,
  counter: { lists: number },
  listFails: (list: number) => boolean,
  handlers: Pick<RestartingInformerSettings, "onListed" | "onWatchOpened" | "onFailure">,
): RestartingInformer<KubernetesObject> {
  return new RestartingInformer<KubernetesObject>({
    config: server.config,
    path: "/api/v1/namespaces/team/configmaps",
    list: async () => {
      counter.lists += 1;
      if (listFails(counter.lists)) throw new Error("the list was refused");
      return aList;
    },
    watchTimeoutMs: 60_000,
    ...handlers,
  });
}

/** A promise, and the function that resolves it. */
function signal(): { readonly seen: Promise<void>; readonly tell: () => void } {
  let tell!: () => void;
  const seen = new Promise<void>((resolve) => (tell = resolve));
  return { seen, tell };
}

test("a list that fails is retried after the owner's pause; the cache then holds the list, and its watch opens", { timeout: 15_000 }, async () => {
  // Each watch is accepted and then silent: the informer watches on, with nothing more to do.
  const server = await silentServer((res) => res.writeHead(200, { "content-type": "application/json" }).flushHeaders());
  const failures: FailurePhase[] = [];
  const listed = signal();
  const opened = signal();
  const counter = { lists: 0 };
  const source = configMapInformer(server, counter, (list) => list === 1, {
    onListed: listed.tell,
    onWatchOpened: opened.tell,
    onFailure: (_error, phase) => {
      failures.push(phase);
      return 20;
    },
  });
  try {
    source.start();
    await listed.seen;
    assert.equal(counter.lists, 2, "listed again after the failure");
    assert.deepEqual(failures, ["watch"], "a failed list is the running informer's error");
    assert.equal(source.listed, true);
    assert.deepEqual(source.cache.list("team").map((object) => object.metadata?.name), ["settings"]);
    await opened.seen;
    assert.equal(server.requests[0]?.searchParams.get("resourceVersion"), "5", "the watch resumes from the list");
  } finally {
    await source.stop();
    server.close();
  }
});

test("stop() cancels a restart that is waiting: nothing lists after it", { timeout: 15_000 }, async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  const server = await silentServer(() => undefined);
  let failed = signal();
  const counter = { lists: 0 };
  const source = configMapInformer(server, counter, () => true, {
    onFailure: () => {
      failed.tell();
      return 1_000;
    },
  });
  try {
    source.start();
    await failed.seen;
    failed = signal();
    // The restart waits for the owner's pause, and comes when it has passed (a start lists at once).
    mock.timers.tick(999);
    assert.equal(counter.lists, 1);
    mock.timers.tick(1);
    assert.equal(counter.lists, 2, "restarted once the pause passed");
    await failed.seen;
    await source.stop();
    mock.timers.tick(10_000);
    assert.equal(counter.lists, 2, "no restart after stop()");
  } finally {
    mock.timers.reset();
    await source.stop();
    server.close();
  }
});
