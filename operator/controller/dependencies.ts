// spec.dependsOn: a new spec of an object is applied only once every object it names (same
// namespace) is Ready for its current generation. Until then nothing runs, and the status names
// what it waits for; a chain of dependsOn that comes back to the object is reported as Stalled.
//
// What waits, and why (docs/api.md#dependencies): only the apply of a spec not applied yet (the
// object's first, or a new generation), which is what "the Memcached first, then the App that uses
// it" orders. A drift repair or a reconcile request of a spec already applied puts back what was
// applied while the dependencies were Ready: holding it would leave a hand edit in place because
// another object is rolling out. A deletion never waits (Flux's rule too): a dependant deleted
// with its dependency would otherwise wait for ever. Nor does a change of the operator's program.
//
// No polling: the watcher keeps a DependencyIndex (dependency -> dependants) and queues an
// object's dependants whenever what they read of it changes (it appears, goes, becomes Ready or
// not, gets a new generation or dependsOn).
import type { DependencyRef, Workload, WorkloadKind } from "../../crds/types.ts";
import { keyString } from "../kube/clients.ts";
import type { Phase } from "./conditions.ts";
import type { Decision } from "./drift.ts";

export function dependenciesOf(object: Workload): readonly DependencyRef[] {
  return object.spec.dependsOn ?? [];
}

/** The work key of a dependency named in `namespace`. */
export function dependencyKey(namespace: string, ref: DependencyRef): string {
  return keyString({ kind: ref.kind, namespace, name: ref.name });
}

const named = (ref: { kind: WorkloadKind; name: string }) => `${ref.kind}/${ref.name}`;

/** Whether a new spec waits for the dependencies: a spec not applied yet, nothing else. */
export function holdsApply(decision: Decision): decision is Extract<Decision, { action: "apply" }> {
  return decision.action === "apply" && (decision.cause === "created" || decision.cause === "spec");
}

/**
 * Why `object` is not Ready for its current generation, or undefined when it is: Ready True for
 * that generation, and status.observedGeneration at it (kstatus's Current, as kubectl wait reads it).
 */
export function notReady(object: Workload | undefined): string | undefined {
  if (!object) return "it does not exist";
  if (object.metadata.deletionTimestamp) return "it is being deleted";
  const generation = object.metadata.generation ?? 0;
  const ready = object.status?.conditions?.find((c) => c.type === "Ready");
  if (ready?.status === "True" && ready.observedGeneration === generation && object.status?.observedGeneration === generation) return undefined;
  const why = ready && ready.status !== "True" && ready.observedGeneration === generation ? ` (${ready.reason})` : "";
  return `not Ready for generation ${generation}${why}`;
}

export type Lookup = (kind: WorkloadKind, name: string) => Workload | undefined;

/**
 * A dependsOn chain from `object` that comes back to it, as the names along it (App/a, App/b,
 * App/a), or undefined. Only cycles through the object itself: one further down is its members'
 * to report, and this object waits on them as on any object not Ready.
 */
export function findCycle(object: Workload, lookup: Lookup): string[] | undefined {
  const start = named({ kind: object.kind, name: object.metadata.name });
  const visited = new Set<string>();
  const walk = (current: Workload, path: string[]): string[] | undefined => {
    for (const ref of dependenciesOf(current)) {
      const next = named(ref);
      if (next === start) return [...path, next];
      if (visited.has(next)) continue;
      visited.add(next);
      const found = lookup(ref.kind, ref.name);
      const cycle = found && walk(found, [...path, next]);
      if (cycle) return cycle;
    }
    return undefined;
  };
  return walk(object, [start]);
}

/**
 * The phase of an object whose new spec waits, or undefined when every dependency is Ready: a
 * cycle is Stalled (only a change of some dependsOn along it ends it); a dependency not Ready or
 * missing is progress (Reconciling, so kstatus reads InProgress: it ends by itself once the
 * dependency is Ready, or is created). `held`: what the object's apply would be, for the message.
 */
export function dependencyPhase(object: Workload, lookup: Lookup, held: string): Phase | undefined {
  const refs = dependenciesOf(object);
  if (!refs.length) return undefined;
  const cycle = findCycle(object, lookup);
  if (cycle) return { kind: "stalled", reason: "DependencyCycle", message: `spec.dependsOn makes a cycle: ${cycle.join(" -> ")}; nothing is applied until a dependsOn along it is removed` };
  const waiting = refs.flatMap((ref) => {
    const why = notReady(lookup(ref.kind, ref.name));
    return why ? [`${named(ref)}: ${why}`] : [];
  });
  if (!waiting.length) return undefined;
  return { kind: "progressing", reason: "DependencyNotReady", message: `waiting for ${waiting.join("; ")}; held back: ${held}` };
}

/** What dependants read of an object: a change of it may end or begin their wait. */
function dependencyState(object: Workload): string {
  return JSON.stringify([notReady(object) ?? "ready", object.metadata.generation, dependenciesOf(object)]);
}

/**
 * The watcher's index from each dependency (a work key, existing or not) to the objects that name
 * it. `seen` and `gone` answer the dependants to queue: those of an object whose state, as they
 * read it, changed.
 */
export class DependencyIndex {
  /** Dependency key -> the keys of the objects that name it. */
  private readonly dependants = new Map<string, Set<string>>();
  /** Object key -> the dependency keys it names. */
  private readonly named = new Map<string, readonly string[]>();
  /** Object key -> dependencyState() when last seen. */
  private readonly states = new Map<string, string>();

  /** `object` (of `key`) was added or updated. */
  seen(key: string, object: Workload): string[] {
    this.index(key, dependenciesOf(object).map((ref) => dependencyKey(object.metadata.namespace, ref)));
    const state = dependencyState(object);
    if (this.states.get(key) === state) return [];
    this.states.set(key, state);
    return this.dependantsOf(key);
  }

  /** The object of `key` was deleted. */
  gone(key: string): string[] {
    this.index(key, []);
    this.states.delete(key);
    return this.dependantsOf(key);
  }

  dependantsOf(key: string): string[] {
    return [...(this.dependants.get(key) ?? [])];
  }

  private index(key: string, dependencies: readonly string[]): void {
    for (const dependency of this.named.get(key) ?? []) {
      const set = this.dependants.get(dependency);
      set?.delete(key);
      if (set && !set.size) this.dependants.delete(dependency);
    }
    if (!dependencies.length) {
      this.named.delete(key);
      return;
    }
    this.named.set(key, dependencies);
    for (const dependency of dependencies) this.dependants.set(dependency, (this.dependants.get(dependency) ?? new Set()).add(key));
  }
}
