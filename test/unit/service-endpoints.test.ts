// Ready waits for the Services' EndpointSlices (operator/controller/service-endpoints.ts): a
// complete rollout whose ready pods a Service does not route to yet is Reconciling, naming it.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1EndpointSlice, V1Pod, V1Service } from "@kubernetes/client-node";
import type { Phase } from "../../operator/controller/conditions.ts";
import { EndpointChanges, withServiceEndpoints } from "../../operator/controller/service-endpoints.ts";

const selector = { "app.kubernetes.io/instance": "web" };
const ready: Phase = { kind: "ready", message: "2 of 2 replicas available" };

function pod(name: string, isReady = true, deleting = false): V1Pod {
  return {
    metadata: { name, labels: { ...selector }, ...(deleting ? { deletionTimestamp: new Date() } : {}) },
    status: { conditions: [{ type: "Ready", status: isReady ? "True" : "False" }] },
  };
}

const service: V1Service = { metadata: { name: "web" }, spec: { selector } };

function slice(endpoints: { pod: string; ready?: boolean }[], name = "web-abcde"): V1EndpointSlice {
  return {
    metadata: { namespace: "default", name },
    addressType: "IPv4",
    endpoints: endpoints.map((e, i) => ({ addresses: [`10.244.0.${i + 2}`], targetRef: { kind: "Pod", name: e.pod }, ...(e.ready === undefined ? {} : { conditions: { ready: e.ready } }) })),
  };
}

/** The check with slices that changed what they route to long ago (`since` 0), unless told. */
const check = (pods: V1Pod[], slices: V1EndpointSlice[], services = [service], phase: Phase = ready, since = 0, now = 10_000) =>
  withServiceEndpoints(phase, pods, { services, slicesOf: () => slices, lastChange: () => since, proxySyncMs: 1_000 }, now).phase;

test("Ready once every ready pod is a ready endpoint, across slices; an endpoint without conditions counts as ready", () => {
  assert.deepEqual(check([pod("a"), pod("b")], [slice([{ pod: "a", ready: true }]), slice([{ pod: "b" }])]), ready);
});

test("Reconciling (EndpointsPending) while a ready pod is missing or not ready in the slices, naming the Service and the count", () => {
  const pending = check([pod("a"), pod("b")], [slice([{ pod: "a" }, { pod: "b", ready: false }])]);
  assert.deepEqual(pending, { kind: "progressing", reason: "EndpointsPending", message: "the Service web routes to 1 of 2 ready pods: its EndpointSlices do not list the others yet" });
  assert.equal(check([pod("a")], []).kind, "progressing");
});

test("pods not ready or terminating are not waited for; nor is a Service without a selector, nor any phase but Ready", () => {
  assert.deepEqual(check([pod("a"), pod("b", false), pod("c", true, true)], [slice([{ pod: "a" }])]), ready);
  assert.deepEqual(check([pod("a")], [], [{ metadata: { name: "by-hand" }, spec: {} }]), ready);
  const rolling: Phase = { kind: "progressing", reason: "RollingOut", message: "1 of 2 replicas updated" };
  assert.equal(check([pod("a")], [], [service], rolling), rolling);
  assert.deepEqual(check([pod("a")], [], []), ready);
});

test("listed everywhere, Ready waits out the service proxies' sync period from the slices' last change, and says when to look again", () => {
  const pods = [pod("a")];
  const slices = [slice([{ pod: "a" }])];
  const routing = { services: [service], slicesOf: () => slices, lastChange: () => 9_600, proxySyncMs: 1_000 };
  assert.deepEqual(withServiceEndpoints(ready, pods, routing, 10_000), {
    phase: { kind: "progressing", reason: "EndpointsPending", message: "the Service web lists every ready pod; waiting 1 s from its last change for the service proxies (kube-proxy) to apply it" },
    recheckInMs: 600,
  });
  assert.deepEqual(withServiceEndpoints(ready, pods, routing, 10_600), { phase: ready });
  assert.deepEqual(withServiceEndpoints(ready, pods, { ...routing, proxySyncMs: 0 }, 10_000), { phase: ready });
});

test("a slice's change counts only when it changes which pods it routes to; those of the first list count as old", () => {
  const changes = new EndpointChanges();
  const listed = slice([{ pod: "a" }], "web-1");
  changes.seen(listed, true, 5_000);
  assert.equal(changes.lastChange([listed]), 0);
  changes.seen(slice([{ pod: "a" }, { pod: "b", ready: false }], "web-1"), false, 6_000);
  assert.equal(changes.lastChange([listed]), 0, "a pod listed not ready routes nothing new");
  changes.seen(slice([{ pod: "a" }, { pod: "b" }], "web-1"), false, 7_000);
  const other = slice([{ pod: "c" }], "web-2");
  changes.seen(other, false, 8_000);
  assert.equal(changes.lastChange([listed]), 7_000);
  assert.equal(changes.lastChange([listed, other]), 8_000);
  changes.gone(other);
  assert.equal(changes.lastChange([other]), 0);
});

test("a suspended object whose children are current is Ready by the same rule: suspended and not Ready until its Services route", () => {
  const suspended: Phase = { kind: "suspended", current: true, message: "2 of 2 replicas available; suspended" };
  assert.deepEqual(check([pod("a")], [slice([{ pod: "a" }])], [service], suspended), suspended);
  assert.deepEqual(check([pod("a")], [], [service], suspended), { kind: "suspended", current: false, message: "2 of 2 replicas available; suspended; the Service web routes to 0 of 1 ready pods: its EndpointSlices do not list the others yet" });
  const held: Phase = { kind: "suspended", current: false, message: "suspended; held back" };
  assert.deepEqual(check([pod("a")], [], [service], held), held, "a suspended object not current is left as it is");
});
