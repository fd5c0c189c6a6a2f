// Ready waits for the Services' EndpointSlices (operator/controller/service-endpoints.ts): a
// complete rollout whose ready pods a Service does not route to yet is Reconciling, naming it.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1EndpointSlice, V1Pod, V1Service } from "@kubernetes/client-node";
import type { Phase } from "../../operator/controller/conditions.ts";
import { withServiceEndpoints } from "../../operator/controller/service-endpoints.ts";

const selector = { "app.kubernetes.io/instance": "web" };
const ready: Phase = { kind: "ready", message: "2 of 2 replicas available" };

function pod(name: string, isReady = true, deleting = false): V1Pod {
  return {
    metadata: { name, labels: { ...selector }, ...(deleting ? { deletionTimestamp: new Date() } : {}) },
    status: { conditions: [{ type: "Ready", status: isReady ? "True" : "False" }] },
  };
}

const service: V1Service = { metadata: { name: "web" }, spec: { selector } };

function slice(endpoints: { pod: string; ready?: boolean }[]): V1EndpointSlice {
  return {
    addressType: "IPv4",
    endpoints: endpoints.map((e, i) => ({ addresses: [`10.244.0.${i + 2}`], targetRef: { kind: "Pod", name: e.pod }, ...(e.ready === undefined ? {} : { conditions: { ready: e.ready } }) })),
  };
}

const check = (pods: V1Pod[], slices: V1EndpointSlice[], services = [service], phase: Phase = ready) => withServiceEndpoints(phase, pods, services, () => slices);

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
