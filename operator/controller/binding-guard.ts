// A namespace-scoped install's rights in a watched namespace come from a RoleBinding in that
// namespace. Deleting the namespace deletes the binding along with the objects; without it the
// operator could neither destroy their stacks nor remove their finalizers, and the namespace would
// stay Terminating for good. So while any appstack object in the namespace carries the operator's
// finalizer, the binding carries one too (`appstack.dev/rbac-in-use`, as the PVC protection
// finalizer keeps a claim while a pod uses it): a binding being deleted still grants (RBAC does not
// look at deletionTimestamp), so the rights outlive the objects, and the operator lets the binding
// go once the last of their finalizers is gone. Nothing is held in a namespace with no appstack
// object, so a namespace without any, or an uninstall after the objects are deleted, never waits.
//
// The operator may `get` and `patch` its own binding only (a rule with resourceNames); the API
// server's escalation check passes, since the change is of finalizers alone (anything else it
// would pass too, the operator holding every rule of the role the binding grants: the install's
// admission policy, components/binding-policy.ts, refuses it a change of subjects). The alternatives were worse: a cluster-wide binding
// for finalizers only gives a namespace-scoped install rights on appstack objects in every
// namespace; forgetting the stacks of a terminating namespace (deletion.ts) still needs the right
// to remove their finalizers, and would leave stack state behind whenever the binding went first.
import { PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions, type V1RoleBinding } from "@kubernetes/client-node";
import { resourceOf, workloadKinds } from "../../components/kinds.ts";
import type { Workload } from "../../crds/types.ts";
import type { Logger } from "../base/log.ts";
import { apiClient, isNotFound, orUndefined, type JsonPatch, type KubeClients } from "../kube/clients.ts";
import { finalizerName } from "./finalizer.ts";

export const bindingFinalizer = "appstack.dev/rbac-in-use";

const jsonPatch = setHeaderOptions("Content-Type", PatchStrategy.JsonPatch);

export class BindingGuard {
  private readonly rbac: RbacAuthorizationV1Api;
  /** Per namespace, the last hold or release: one at a time, so that a release never misses an object's finalizer added meanwhile. */
  private readonly turns = new Map<string, Promise<unknown>>();
  private readonly clients: KubeClients;
  private readonly binding: string | undefined;
  private readonly log: Logger;
  /** Namespaces whose last release failed. */
  private readonly owed = new Set<string>();

  /** `binding`: the name of the operator's RoleBinding in each watched namespace; undefined (a cluster-wide install, or none) guards nothing. */
  constructor(clients: KubeClients, binding: string | undefined, log: Logger, rbac?: RbacAuthorizationV1Api) {
    this.clients = clients;
    this.binding = binding;
    this.log = log;
    this.rbac = rbac ?? apiClient(clients.config, RbacAuthorizationV1Api);
  }

  /** Runs `addObjectFinalizer` once the namespace's binding carries its finalizer: no object's finalizer without it. */
  async guarded<T>(namespace: string, addObjectFinalizer: () => Promise<T>): Promise<T> {
    const binding = this.binding;
    if (!binding) return addObjectFinalizer();
    return this.inTurn(namespace, async () => {
      const current = await this.read(namespace, binding);
      // Not there (the rights come from elsewhere), or already being deleted (no finalizer may be added then): nothing to keep.
      if (current && !current.metadata?.deletionTimestamp && !current.metadata?.finalizers?.includes(bindingFinalizer)) {
        const finalizers = current.metadata?.finalizers;
        const patch: JsonPatch = finalizers
          ? [{ op: "test", path: "/metadata/finalizers", value: finalizers }, { op: "add", path: "/metadata/finalizers/-", value: bindingFinalizer }]
          : [{ op: "add", path: "/metadata/finalizers", value: [bindingFinalizer] }];
        await this.rbac.patchNamespacedRoleBinding({ name: binding, namespace, body: patch }, jsonPatch);
        this.log.info("the RBAC binding is kept while appstack objects of this namespace have finalizers", { namespace, binding });
      }
      return addObjectFinalizer();
    });
  }

  /**
   * Lets the namespace's binding go once no appstack object in it carries the operator's finalizer.
   * A release that fails is owed (`releaseOwed`) until one succeeds.
   */
  async releaseIfUnused(namespace: string): Promise<void> {
    const binding = this.binding;
    if (!binding) return;
    try {
      await this.release(namespace, binding);
      this.owed.delete(namespace);
    } catch (error) {
      this.owed.add(namespace);
      throw error;
    }
  }

  /** Whether the last release in `namespace` failed: the next reconcile of a gone object there tries it again (a restart tries them all). */
  releaseOwed(namespace: string): boolean {
    return this.owed.has(namespace);
  }

  private async release(namespace: string, binding: string): Promise<void> {
    await this.inTurn(namespace, async () => {
      const index = (await this.read(namespace, binding))?.metadata?.finalizers?.indexOf(bindingFinalizer) ?? -1;
      if (index < 0 || (await this.anyFinalized(namespace))) return;
      const patch: JsonPatch = [{ op: "test", path: `/metadata/finalizers/${index}`, value: bindingFinalizer }, { op: "remove", path: `/metadata/finalizers/${index}` }];
      await this.rbac.patchNamespacedRoleBinding({ name: binding, namespace, body: patch }, jsonPatch).catch((error: unknown) => {
        if (!isNotFound(error)) throw error;
      });
      this.log.info("no appstack object of this namespace has a finalizer left; the RBAC binding is let go", { namespace, binding });
    });
  }

  /** Undefined when there is no such binding, or (Forbidden) no binding of the operator's there any more. */
  private async read(namespace: string, binding: string): Promise<V1RoleBinding | undefined> {
    try {
      return await orUndefined(() => this.rbac.readNamespacedRoleBinding({ name: binding, namespace }));
    } catch (error) {
      if ((error as { code?: number }).code === 403) return undefined;
      throw error;
    }
  }

  /** From the API server, not a cache: an object whose finalizer was just added must count. */
  private async anyFinalized(namespace: string): Promise<boolean> {
    for (const kind of workloadKinds()) {
      const list = (await this.clients.custom.listNamespacedCustomObject({ ...resourceOf(kind), namespace })) as { items: Workload[] };
      if (list.items.some((object) => object.metadata.finalizers?.includes(finalizerName))) return true;
    }
    return false;
  }

  private inTurn<T>(namespace: string, work: () => Promise<T>): Promise<T> {
    const next = (this.turns.get(namespace) ?? Promise.resolve()).catch(() => undefined).then(work);
    this.turns.set(namespace, next);
    void next.finally(() => {
      if (this.turns.get(namespace) === next) this.turns.delete(namespace);
    }).catch(() => undefined);
    return next;
  }
}
