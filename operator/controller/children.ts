// An object's children as they are in the cluster, judged against the manifests its component
// applies: missing, someone else's (a conflict: never written, never deleted), or ours with the
// fields that differ. Read from the watch cache where that is fresh enough; from the API server
// where the cache cannot know (objects without appstack's labels) or where the answer must name
// what `up` has just made.
import { PatchStrategy, type KubernetesObject, type V1Deployment } from "@kubernetes/client-node";
import { childKindNamed, childManifests } from "../../components/kinds.ts";
import type { ChildManifest } from "../../components/workload.ts";
import { fieldManager } from "../../components/metadata.ts";
import type { Workload } from "../../crds/types.ts";
import { additions } from "./additions.ts";
import { differences } from "./compare.ts";
import { handOver } from "./handover.ts";
import { actingAs, isConflict, orUndefined, type JsonPatch, type KubeClients } from "../kube/clients.ts";
import type { RecordedChild } from "../pulumi/checkpoints.ts";
import { actingUser, type Tenancy } from "./tenancy.ts";
import type { Watcher } from "./watch.ts";

export type ChildState =
  | { readonly child: ChildManifest; readonly state: "missing" }
  /** Exists, but was not created for this object: `controller` names who controls it, if anyone. */
  | { readonly child: ChildManifest; readonly state: "foreign"; readonly controller?: string }
  /** `differences` includes `added`: what others added to its spec (additions.ts), which Pulumi cannot see. */
  | { readonly child: ChildManifest; readonly state: "owned"; readonly live: KubernetesObject; readonly differences: readonly string[]; readonly added: readonly string[] };

export interface Observed {
  readonly children: readonly ChildState[];
  /** The object's own Deployment (the first its kind makes), while it exists; never another object's. */
  readonly deployment?: V1Deployment;
  /** Children of the same name that this object did not create. */
  readonly conflicts: readonly ChildState[];
  /** Every difference, as `Deployment web: spec.replicas: 5, want 2`; missing children included. */
  readonly drift: readonly string[];
}

/** Whether `child` was created for `object`: its controller reference names the object's uid. */
export function isControlledBy(child: KubernetesObject, object: Workload): boolean {
  return (child.metadata?.ownerReferences ?? []).some((ref) => ref.controller && ref.uid === object.metadata.uid);
}

function controllerOf(child: KubernetesObject): string | undefined {
  const ref = child.metadata?.ownerReferences?.find((r) => r.controller);
  return ref ? `${ref.kind}/${ref.name}` : undefined;
}

/** Judges one live child (or its absence) against its manifest. */
export function judge(object: Workload, child: ChildManifest, live: KubernetesObject | undefined): ChildState {
  if (!live) return { child, state: "missing" };
  if (!isControlledBy(live, object)) return { child, state: "foreign", controller: controllerOf(live) };
  const added = additions(child.manifest, live.metadata?.managedFields ?? [], fieldManager);
  return { child, state: "owned", live, differences: [...differences(child.manifest, live), ...added], added };
}

export function summarize(children: readonly ChildState[]): Observed {
  // The first a kind makes, whose pods are the object's: while it is missing, another is not taken for it.
  const deployment = children.find((c) => c.child.kind === "Deployment");
  return {
    children,
    deployment: deployment?.state === "owned" ? deployment.live : undefined,
    conflicts: children.filter((c) => c.state === "foreign"),
    drift: children.flatMap((c) => {
      const label = `${c.child.kind} ${c.child.name}`;
      if (c.state === "missing") return [`${label}: missing`];
      return c.state === "owned" ? c.differences.map((d) => `${label}: ${d}`) : [];
    }),
  };
}

/** Reads and handovers of one child, when the API server keeps saying it changed in between. */
const handOverAttempts = 3;

export class Children {
  private readonly clients: KubeClients;
  private readonly watcher: Watcher;
  private readonly tenancy: Tenancy | undefined;

  constructor(
    clients: KubeClients,
    watcher: Watcher,
    tenancy?: Tenancy,
  ) {
    this.clients = clients;
    this.watcher = watcher;
    this.tenancy = tenancy;
  }

  /** Who writes the object's children: its ServiceAccount with tenant identities on (tenancy.ts), else the operator. Reads stay the operator's. */
  private writer(object: Workload): KubeClients {
    const user = actingUser(object, this.tenancy);
    return user ? actingAs(this.clients, user) : this.clients;
  }

  /**
   * The children as the cache has them; what the cache lacks (a child just created, one without
   * appstack's labels, a foreign one) is asked of the API server. With `fresh`, everything is.
   */
  async observe(object: Workload, fresh = false): Promise<Observed> {
    let cached = false;
    const children = await Promise.all(childManifests(object).map(async (child) => {
      const fromCache = fresh ? undefined : this.cached(object.metadata.namespace, child);
      cached ||= fromCache !== undefined;
      return judge(object, child, fromCache ?? (await this.read(object.metadata.namespace, child)));
    }));
    const observed = summarize(children);
    // The cache may not have seen our own latest write yet: a difference is confirmed with the
    // API server before anyone acts on it (a needless repair costs a Pulumi run).
    if (cached && (observed.drift.length || observed.conflicts.length)) return this.observe(object, true);
    return observed;
  }

  /**
   * Hands what others set in the spec of every drifted child over to appstack's field manager
   * (handover.ts), so that the repair's apply removes what they added. Returns how many children it changed.
   */
  async handOverEdits(object: Workload, observed: Observed): Promise<number> {
    let handed = 0;
    for (const state of observed.children) {
      if (state.state !== "owned" || !state.differences.length) continue;
      if (await this.handOverChild(object, state)) handed++;
    }
    return handed;
  }

  /**
   * One child's handover, tested against the resourceVersion read: the Deployment controller's
   * status writes move it often, so a conflict is retried on a fresh read, as long as that read
   * says the same about the child (else the next reconcile judges it anew: nothing is handed over,
   * and then removed, that the drift report did not name).
   */
  private async handOverChild(object: Workload, judged: Extract<ChildState, { state: "owned" }>): Promise<boolean> {
    const namespace = object.metadata.namespace;
    let state = judged;
    for (let attempt = 1; attempt <= handOverAttempts; attempt++) {
      const managedFields = handOver(state.live.metadata?.managedFields ?? [], fieldManager);
      if (!managedFields) return false;
      const patch: JsonPatch = [
        { op: "test", path: "/metadata/resourceVersion", value: state.live.metadata?.resourceVersion },
        { op: "replace", path: "/metadata/managedFields", value: managedFields },
      ];
      const target = { name: state.child.name, namespace, body: patch };
      try {
        await this.writer(object).objects.patchChild(childKindNamed(state.child.kind), target, PatchStrategy.JsonPatch);
        return true;
      } catch (error) {
        if (!isConflict(error)) throw error;
      }
      const fresh = judge(object, state.child, await this.read(namespace, state.child));
      if (fresh.state !== "owned" || fresh.differences.join("\n") !== judged.differences.join("\n")) return false;
      state = fresh;
    }
    return false;
  }

  /**
   * Removes what others added to the children's spec, which Pulumi's diff cannot see: after the
   * handover appstack's field manager owns those fields, and a server-side apply of exactly the
   * manifest the component applies (as `pulumi up` would send it: the same manager, forced)
   * removes them. Only where the repair runs, never before an approval. Returns how many children it applied.
   */
  async removeAdditions(object: Workload, observed: Observed): Promise<number> {
    let applied = 0;
    for (const state of observed.children) {
      if (state.state !== "owned" || !state.added.length) continue;
      const { kind, name, manifest } = state.child;
      const target = { name, namespace: object.metadata.namespace, fieldManager, force: true };
      const childKind = childKindNamed(kind);
      await this.writer(object).objects.patchChild(childKind, { ...target, body: { apiVersion: childKind.apiVersion, kind, ...manifest } }, PatchStrategy.ServerSideApply);
      applied++;
    }
    return applied;
  }

  /**
   * Which of `recorded` (the children a stack's state names) exist now as someone else's object:
   * a child deleted by hand whose name another object took since. Asked of the API server: what
   * the engine would update or delete next must be judged on the object as it is now.
   */
  async foreignAmong(object: Workload, recorded: readonly RecordedChild[]): Promise<{ readonly child: RecordedChild; readonly controller?: string }[]> {
    const judged = await Promise.all(recorded.map(async (child) => ({ child, live: await this.read(child.namespace, child) })));
    return judged.filter(({ live }) => live && !isControlledBy(live, object)).map(({ child, live }) => ({ child, controller: controllerOf(live!) }));
  }

  private cached(namespace: string, child: ChildManifest): KubernetesObject | undefined {
    return this.watcher.child(child.kind, namespace, child.name);
  }

  private read(namespace: string, child: Pick<ChildManifest, "kind" | "name">): Promise<KubernetesObject | undefined> {
    return orUndefined(() => this.clients.objects.readChild(childKindNamed(child.kind), namespace, child.name));
  }
}
