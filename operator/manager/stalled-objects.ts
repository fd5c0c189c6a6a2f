// The objects that need a person now: those whose Stalled condition is True (conditions.ts), as the
// replica's watch caches hold them, counted by kind and reason for the metric appstack_stalled_objects
// (metrics.ts). Read from the caches at each scrape, so the count is the status as the API server has
// it, whoever wrote it (this replica, the leader before it), and needs no bookkeeping of its own.
import type { Workload, WorkloadKind } from "../../crds/types.ts";
import { parseKey } from "../kube/clients.ts";

export interface StalledObject {
  readonly kind: string;
  readonly reason: string;
}

/** What the counting reads of the running operator's watch caches (controller/watch.ts's Watcher). */
export interface CachedWorkloads {
  keys(): string[];
  workload(kind: WorkloadKind, namespace: string, name: string): Workload | undefined;
}

/** Each cached object whose Stalled condition is True, with that condition's reason. */
export function stalledObjects(cache: CachedWorkloads): StalledObject[] {
  return cache.keys().flatMap((key) => {
    const { kind, namespace, name } = parseKey(key);
    const stalled = cache.workload(kind, namespace, name)?.status?.conditions?.find((condition) => condition.type === "Stalled" && condition.status === "True");
    return stalled ? [{ kind, reason: stalled.reason || "Unknown" }] : [];
  });
}

/** The objects counted by kind and reason, as the gauge's series. */
export function countStalled(objects: readonly StalledObject[]): { labels: StalledObject; count: number }[] {
  const counts = new Map<string, { labels: StalledObject; count: number }>();
  for (const object of objects) {
    const key = `${object.kind}/${object.reason}`;
    const entry = counts.get(key) ?? { labels: { kind: object.kind, reason: object.reason }, count: 0 };
    entry.count += 1;
    counts.set(key, entry);
  }
  return [...counts.values()];
}
