// Which watched namespaces the operator cannot read. With a list of namespaces, its rights come
// from a RoleBinding in each; once a namespace is deleted (or its binding is), every list and
// watch there answers 403 Forbidden. Such a namespace must not hold the other namespaces' work:
// its informers count as synced and empty, are retried with backoff, and the namespace is
// reported once each time it becomes unreadable and once when it is readable again.
//
// Only 403 counts. The API server answers a list or watch in a namespace that does not exist with
// an empty list to a user allowed to read there, so a namespace that is gone shows as 403 to a
// namespace-scoped operator and as nothing at all to a cluster-wide one; a 404 means the resource
// type itself is missing (a CRD not installed), which no namespace is to blame for.

/** The HTTP status of a failed list (client-node's ApiException: `code`) or watch (`statusCode`). */
export function httpStatusOf(error: unknown): number | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const { code, statusCode } = error as { code?: unknown; statusCode?: unknown };
  if (typeof code === "number") return code;
  return typeof statusCode === "number" ? statusCode : undefined;
}

export function isForbidden(error: unknown): boolean {
  return httpStatusOf(error) === 403;
}

/** The first retry of an unreadable namespace's informer, doubled after each failure up to `maxUnreadableRetryMs`. */
export const firstUnreadableRetryMs = 3_000;
/** As client-go's reflector caps its backoff: a namespace readable again is picked up within this. */
export const maxUnreadableRetryMs = 30_000;

/** The delay before the next attempt after `failures` consecutive forbidden answers (1 or more). */
export function unreadableRetryMs(failures: number): number {
  const doublings = Math.max(0, Math.min(failures - 1, 16));
  return Math.min(maxUnreadableRetryMs, firstUnreadableRetryMs * 2 ** doublings);
}

/** A namespace that became unreadable, or readable again; undefined when its state did not change. */
export type AvailabilityChange = "unreadable" | "readable" | undefined;

/**
 * Per watched namespace, which of its informers were last answered 403. A namespace is unreadable
 * while any of them is; it changes state at the first forbidden answer, and back once every one of
 * them has listed or watched again.
 */
export class NamespaceAvailability {
  private readonly forbidden = new Map<string, Set<string>>();

  constructor(namespaces: readonly string[]) {
    for (const namespace of namespaces) this.forbidden.set(namespace, new Set());
  }

  /** `watch` (an informer's name) in `namespace` was answered 403. */
  denied(namespace: string, watch: string): AvailabilityChange {
    const denied = this.deniedIn(namespace);
    const before = denied.size;
    denied.add(watch);
    return before === 0 ? "unreadable" : undefined;
  }

  /** `watch` in `namespace` listed, or its watch opened. */
  read(namespace: string, watch: string): AvailabilityChange {
    const denied = this.deniedIn(namespace);
    return denied.delete(watch) && denied.size === 0 ? "readable" : undefined;
  }

  unreadable(namespace: string): boolean {
    return (this.forbidden.get(namespace)?.size ?? 0) > 0;
  }

  /** Every watched namespace, and whether it is unreadable now. */
  states(): ReadonlyMap<string, boolean> {
    return new Map([...this.forbidden].map(([namespace, denied]) => [namespace, denied.size > 0]));
  }

  private deniedIn(namespace: string): Set<string> {
    let denied = this.forbidden.get(namespace);
    if (!denied) this.forbidden.set(namespace, (denied = new Set()));
    return denied;
  }
}
