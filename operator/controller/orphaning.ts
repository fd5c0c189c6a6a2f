// spec.deletionPolicy Orphan, and the deletion of any suspended object (as kustomize-controller skips
// its garbage collection for a suspended Kustomization): the children stay, running, for whoever
// takes them over next. What made them appstack's goes: the ownerReference to the object (the
// garbage collector would delete them with it, and the ownership policy reads it as appstack's
// claim), the managed-by label (the operator's watches select by it) and the provider's annotations.
// The selector labels stay: a Deployment's selector is immutable, and its pods carry them.
import { PatchStrategy, type KubernetesObject } from "@kubernetes/client-node";
import { childKindNamed, childManifests } from "../../components/kinds.ts";
import { instanceLabel, kindLabel, managedBy, managedByLabel, pulumiAnnotations } from "../../components/metadata.ts";
import type { Workload } from "../../crds/types.ts";
import { actingAs, isConflict, orUndefined, type JsonPatch, type KubeClients } from "../kube/clients.ts";
import type { RecordedChild } from "../pulumi/checkpoints.ts";
import { isControlledBy } from "./children.ts";
import { isSuspended } from "./suspension.ts";
import { actingUser, type Tenancy } from "./tenancy.ts";

/** Whether deleting `object` leaves its children in place rather than destroying them. */
export function deletesAsOrphan(object: Workload): boolean {
  return object.spec.deletionPolicy === "Orphan" || isSuspended(object);
}

/** A JSON pointer's escaping of one key (RFC 6901): the label and annotation keys hold `/`. */
const pointer = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1");

/**
 * The patch that takes appstack's marks off `live`, tested against the resourceVersion read (a
 * child changed since is read again rather than patched by index); undefined when it has none.
 */
export function unmarking(live: KubernetesObject, uid: string): JsonPatch | undefined {
  const { ownerReferences = [], labels = {}, annotations = {}, resourceVersion } = live.metadata ?? {};
  const references = ownerReferences.flatMap((ref, index) => (ref.uid === uid ? [index] : []));
  const removals: JsonPatch = [
    // From the last: each removal shifts the indices after it.
    ...references.reverse().map((index) => ({ op: "remove" as const, path: `/metadata/ownerReferences/${index}` })),
    ...(labels[managedByLabel] === managedBy ? [{ op: "remove" as const, path: `/metadata/labels/${pointer(managedByLabel)}` }] : []),
    ...Object.keys(pulumiAnnotations).filter((key) => key in annotations).map((key) => ({ op: "remove" as const, path: `/metadata/annotations/${pointer(key)}` })),
  ];
  return removals.length ? [{ op: "test", path: "/metadata/resourceVersion", value: resourceVersion }, ...removals] : undefined;
}

/**
 * Whether `live`, not controlled by `object`, was orphaned by it already (a pass interrupted after
 * its patches): no controller, and the object's kind and instance labels. Named, never changed.
 */
function orphanedBefore(live: KubernetesObject, object: Workload): boolean {
  const labels = live.metadata?.labels ?? {};
  return !live.metadata?.ownerReferences?.some((ref) => ref.controller) && labels[kindLabel] === object.kind && labels[instanceLabel] === object.metadata.name;
}

/** Reads and patches of one child, when the API server keeps saying it changed in between. */
const unmarkAttempts = 3;

export class Orphaning {
  private readonly clients: KubeClients;
  private readonly tenancy: Tenancy | undefined;

  constructor(clients: KubeClients, tenancy?: Tenancy) {
    this.clients = clients;
    this.tenancy = tenancy;
  }

  /**
   * Takes appstack's marks off every child of `object`: those the stack's state records (a Service
   * of an earlier spec included) and those its spec makes (one created by an `up` killed before its
   * checkpoint). Only children whose controller is this object are changed; run again, it changes
   * nothing. Returns the children left in place, as `Deployment web`.
   */
  async orphan(object: Workload, recorded: readonly RecordedChild[]): Promise<string[]> {
    const namespace = object.metadata.namespace;
    const candidates = new Map<string, RecordedChild>();
    // The spec's children first, in the spec's order, then any other the state records: the Event
    // names them in an order that does not depend on which create the engine finished first.
    for (const child of [...childManifests(object).map(({ kind, name }) => ({ kind, namespace, name })), ...recorded]) candidates.set(`${child.kind} ${child.namespace}/${child.name}`, child);
    const left: string[] = [];
    for (const child of candidates.values()) {
      if (await this.unmark(object, child)) left.push(`${child.kind} ${child.name}${child.namespace === namespace ? "" : ` (namespace ${child.namespace})`}`);
    }
    return left;
  }

  /** Unmarks one child if `object` controls it; whether it is, or was, `object`'s and still exists. */
  private async unmark(object: Workload, child: RecordedChild): Promise<boolean> {
    const kind = childKindNamed(child.kind);
    for (let attempt = 1; ; attempt++) {
      const live = await orUndefined(() => this.clients.objects.readChild(kind, child.namespace, child.name));
      if (!live) return false;
      if (!isControlledBy(live, object)) return orphanedBefore(live, object);
      const patch = unmarking(live, object.metadata.uid);
      if (!patch) return true;
      try {
        await this.writer(object).objects.patchChild(kind, { name: child.name, namespace: child.namespace, body: patch }, PatchStrategy.JsonPatch);
        return true;
      } catch (error) {
        if (!isConflict(error) || attempt >= unmarkAttempts) throw error;
      }
    }
  }

  /** As Children's writes: the object's ServiceAccount with tenant identities on (tenancy.ts), else the operator. */
  private writer(object: Workload): KubeClients {
    const user = actingUser(object, this.tenancy);
    return user ? actingAs(this.clients, user) : this.clients;
  }
}
