// Ready means served: a request to the object's Service right after `kubectl wait
// --for=condition=Ready` must reach a pod. A pod turns ready before the EndpointSlice controller
// lists it in its Service's EndpointSlices, and kube-proxy routes only to what those list; so a
// complete rollout is Ready only once every Service of the object lists each ready pod it selects
// as a ready endpoint. (kube-proxy then applies the change within its sync period, about a second,
// which no API object reports.)
import type { V1EndpointSlice, V1Pod, V1Service } from "@kubernetes/client-node";
import type { Phase } from "./conditions.ts";

/** The label the EndpointSlice controller puts on each slice of a Service. */
export const serviceNameLabel = "kubernetes.io/service-name";

function isReady(pod: V1Pod): boolean {
  return !pod.metadata?.deletionTimestamp && pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
}

function selects(service: V1Service, pod: V1Pod): boolean {
  const selector = Object.entries(service.spec?.selector ?? {});
  return selector.length > 0 && selector.every(([label, value]) => pod.metadata?.labels?.[label] === value);
}

/** The names of the pods `slices` list as ready endpoints (an endpoint without the condition is ready, as the API says). */
function readyEndpoints(slices: readonly V1EndpointSlice[]): Set<string> {
  const names = new Set<string>();
  for (const slice of slices) {
    for (const endpoint of slice.endpoints ?? []) {
      if (endpoint.targetRef?.kind === "Pod" && endpoint.targetRef.name && endpoint.conditions?.ready !== false) names.add(endpoint.targetRef.name);
    }
  }
  return names;
}

/**
 * `phase`, unless it is Ready and a Service in `services` does not yet route to every ready pod of
 * `pods` it selects: then Reconciling (EndpointsPending), naming the Service. `slicesOf` gives a
 * Service's EndpointSlices. A Service without a selector has its endpoints written by hand, and
 * is not waited for.
 */
export function withServiceEndpoints(phase: Phase, pods: readonly V1Pod[], services: readonly V1Service[], slicesOf: (service: V1Service) => readonly V1EndpointSlice[]): Phase {
  if (phase.kind !== "ready") return phase;
  for (const service of services) {
    const selected = pods.filter((pod) => isReady(pod) && selects(service, pod));
    if (selected.length === 0) continue;
    const listed = readyEndpoints(slicesOf(service));
    const routed = selected.filter((pod) => listed.has(pod.metadata?.name ?? "")).length;
    if (routed < selected.length) {
      const name = service.metadata?.name ?? "";
      return { kind: "progressing", reason: "EndpointsPending", message: `the Service ${name} routes to ${routed} of ${selected.length} ready pods: its EndpointSlices do not list the others yet` };
    }
  }
  return phase;
}
