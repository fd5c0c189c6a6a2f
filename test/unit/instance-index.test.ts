// The instance index (operator/controller/instance-index.ts), on pods against client-node's own cache: whatever the
// watch and the relists do, the index answers what a scan of the namespace's pods answers.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ListWatch, type V1Pod, type Watch } from "@kubernetes/client-node";
import { InstanceIndex } from "../../operator/controller/instance-index.ts";

type Handler = (phase: string, object: unknown) => void;

/** A watch the test drives: it keeps the handler of the open watch and ends it on demand. */
class DrivenWatch {
  handler?: Handler;
  done?: (error: unknown) => void;

  watch(_path: string, _query: unknown, handler: Handler, done: (error: unknown) => void): Promise<AbortController> {
    this.handler = handler;
    this.done = done;
    return Promise.resolve(new AbortController());
  }
}

let version = 0;
function pod(namespace: string, name: string, labels: Record<string, string>): V1Pod {
  version += 1;
  return { metadata: { namespace, name, labels, resourceVersion: String(version) } };
}

const web = (instance: string) => ({ "app.kubernetes.io/name": "web", "app.kubernetes.io/instance": instance, "app.kubernetes.io/managed-by": "appstack" });
const selectorOf = (instance: string) => ({ "app.kubernetes.io/name": "web", "app.kubernetes.io/instance": instance });
const names = (pods: readonly V1Pod[]) => pods.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).sort();

function scan(cache: ListWatch<V1Pod>, namespace: string, selector: Record<string, string>): string[] {
  return names(cache.list(namespace).filter((p) => Object.entries(selector).every(([k, v]) => p.metadata?.labels?.[k] === v)));
}

test("the pod index answers as a scan of the cache does, through watch events and relists", async () => {
  const watch = new DrivenWatch();
  let listed: V1Pod[] = [pod("a", "one-1", web("one")), pod("a", "one-2", web("one")), pod("a", "two-1", web("two")), pod("b", "one-1", web("one"))];
  const cache = new ListWatch<V1Pod>("/api/v1/pods", watch as unknown as Watch, () => Promise.resolve({ metadata: { resourceVersion: String(version) }, items: listed }), false);
  const index = new InstanceIndex<V1Pod>();
  index.follow(cache);
  const agrees = (step: string) => {
    for (const namespace of ["a", "b"]) {
      for (const instance of ["one", "two", "three"]) {
        assert.deepEqual(names(index.select(namespace, selectorOf(instance))), scan(cache, namespace, selectorOf(instance)), `${step}: ${namespace}/${instance}`);
      }
    }
  };

  await cache.start();
  assert.deepEqual(names(index.select("a", selectorOf("one"))), ["a/one-1", "a/one-2"], "the first list's pods, of one namespace and instance only");
  agrees("first list");

  watch.handler?.("ADDED", pod("a", "two-2", web("two")));
  agrees("a pod added");
  watch.handler?.("MODIFIED", pod("a", "one-2", web("three")));
  assert.deepEqual(names(index.select("a", selectorOf("three"))), ["a/one-2"], "a relabelled pod moves to its new instance");
  agrees("a pod relabelled");
  watch.handler?.("MODIFIED", pod("a", "one-1", { ...web("one"), "app.kubernetes.io/name": "other" }));
  agrees("a pod whose other label changed");
  watch.handler?.("DELETED", pod("a", "two-1", web("two")));
  agrees("a pod deleted");

  // The watch ends with 410 Gone: the cache lists again, and what the list lacks is deleted.
  listed = [pod("a", "two-2", web("two")), pod("a", "three-1", web("three")), pod("b", "two-9", web("two"))];
  watch.handler?.("ERROR", { code: 410 });
  await new Promise<void>((resolve) => {
    const relisted = watch.handler;
    watch.done?.(null);
    const poll = () => (watch.handler !== relisted ? resolve() : setImmediate(poll));
    poll();
  });
  assert.deepEqual(names(index.select("b", selectorOf("one"))), [], "a pod the relist lacks is gone");
  assert.deepEqual(names(index.select("a", selectorOf("three"))), ["a/three-1"], "a relabelled pod the relist lacks is gone from its new instance too");
  agrees("relisted");
  await cache.stop();
});

test("a selector without the instance label reads the namespace's pods", () => {
  const pods = [pod("a", "x", { app: "x" }), pod("a", "y", { app: "y" })];
  const source = { on: () => undefined, get: () => undefined, list: () => pods };
  const index = new InstanceIndex<V1Pod>();
  index.follow(source);
  assert.deepEqual(names(index.select("a", { app: "y" })), ["a/y"]);
});
