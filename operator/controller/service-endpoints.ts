// Ready means served: a request to the object's Service right after `kubectl wait
// --for=condition=Ready` must reach a pod. A pod turns ready before the EndpointSlice controller
// lists it in its Service's EndpointSlices, and a service proxy (kube-proxy) routes only to what
// those list, and applies a change of them within its minimum sync period (kube-proxy's
// minSyncPeriod, 1 s by default), which no API object reports. So a complete rollout is Ready
// only once every Service of the object lists each ready pod it selects as a ready endpoint, and
// has listed the same ready pods for that period (`proxySyncMs`).
import type { KubernetesObject, V1EndpointSlice, V1Pod, V1Service } from "@kubernetes/client-node";
import { isReadyPhase, type Phase } from "./conditions.ts";

/** The label the EndpointSlice controller puts on each slice of a Service. */
export const serviceNameLabel = "kubernetes.io/service-name";

/** kube-proxy's default minSyncPeriod. */
export const defaultProxySyncMs = 1_000;

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

const sliceKey = (slice: KubernetesObject) => `${slice.metadata?.namespace ?? ""}/${slice.metadata?.name ?? ""}`;

/**
 * When each EndpointSlice last changed which pods it routes to, as the watch saw it: what the
 * service proxies apply. A slice known from the first list (a restart of the operator) has routed
 * as it does for longer than anyone waits; so has one whose update changed nothing routed.
 */
export class EndpointChanges {
  private readonly routed = new Map<string, { readonly pods: string; readonly since: number }>();

  /** A slice as an informer delivered it; `fromFirstList`: before the informer's first list completed. */
  seen(slice: V1EndpointSlice, fromFirstList: boolean, now = Date.now()): void {
    const pods = [...readyEndpoints([slice])].sort().join(",");
    const before = this.routed.get(sliceKey(slice));
    if (before?.pods === pods) return;
    this.routed.set(sliceKey(slice), { pods, since: fromFirstList ? 0 : now });
  }

  gone(slice: KubernetesObject): void {
    this.routed.delete(sliceKey(slice));
  }

  /** The last time any of `slices` changed what it routes to (0: not since the operator started). */
  lastChange(slices: readonly KubernetesObject[]): number {
    return Math.max(0, ...slices.map((slice) => this.routed.get(sliceKey(slice))?.since ?? 0));
  }
}

/** What the check reads of the cluster, beside the pods. */
export interface ServiceRouting {
  readonly services: readonly V1Service[];
  slicesOf(service: V1Service): readonly V1EndpointSlice[];
  /** When the slices last changed what they route to (EndpointChanges.lastChange). */
  lastChange(slices: readonly V1EndpointSlice[]): number;
  /** How long service proxies take to apply a change of the slices (`APPSTACK_PROXY_SYNC_MS`). */
  readonly proxySyncMs: number;
}

/**
 * `phase`, unless it is Ready and a Service of `routing` does not yet route to every ready pod of
 * `pods` it selects, or began to less than `proxySyncMs` ago: then Reconciling (EndpointsPending),
 * naming the Service, with when to look again. A suspended object whose children are current is
 * Ready by the same rule: until its Services route, it stays suspended and not Ready, saying why.
 * A Service without a selector has its endpoints written by hand, and is not waited for.
 */
export function withServiceEndpoints(phase: Phase, pods: readonly V1Pod[], routing: ServiceRouting, now = Date.now()): { phase: Phase; recheckInMs?: number } {
  const pending = isReadyPhase(phase) ? routingPending(pods, routing, now) : undefined;
  if (!pending) return { phase };
  const held: Phase = phase.kind === "suspended" ? { kind: "suspended", current: false, message: `${phase.message}; ${pending.message}` } : { kind: "progressing", reason: "EndpointsPending", message: pending.message };
  return pending.recheckInMs === undefined ? { phase: held } : { phase: held, recheckInMs: pending.recheckInMs };
}

/** Why a Service of `routing` does not route to the ready pods yet, with when to look again if time alone will tell; undefined when every one does. */
function routingPending(pods: readonly V1Pod[], routing: ServiceRouting, now: number): { message: string; recheckInMs?: number } | undefined {
  let settling: { message: string; recheckInMs: number } | undefined;
  for (const service of routing.services) {
    const selected = pods.filter((pod) => isReady(pod) && selects(service, pod));
    if (selected.length === 0) continue;
    const slices = routing.slicesOf(service);
    const listed = readyEndpoints(slices);
    const routed = selected.filter((pod) => listed.has(pod.metadata?.name ?? "")).length;
    const name = service.metadata?.name ?? "";
    if (routed < selected.length) return { message: `the Service ${name} routes to ${routed} of ${selected.length} ready pods: its EndpointSlices do not list the others yet` };
    const since = routing.lastChange(slices);
    const waitMs = since + routing.proxySyncMs - now;
    if (waitMs > (settling?.recheckInMs ?? 0)) {
      // No moving figure in the message: every report would write the status again.
      settling = { message: `the Service ${name} lists every ready pod; waiting ${routing.proxySyncMs / 1000} s from its last change for the service proxies (kube-proxy) to apply it`, recheckInMs: waitMs };
    }
  }
  return settling;
}
