// An object being deleted: its stack destroyed (the children with it), then its finalizer removed.
// In a namespace that is terminating, a destroy that keeps failing gives way to forgetting the
// stack: the namespace takes the children with it, and a stuck finalizer would hold it forever.
// With deletionPolicy Orphan, or suspended, the children are left instead (orphaning.ts).
import type { V1Deployment } from "@kubernetes/client-node";
import type { Workload } from "../../crds/types.ts";
import type { Children } from "./children.ts";
import { ReportedFailure } from "./errors.ts";
import type { EventRecorder } from "./events.ts";
import type { BindingGuard } from "./binding-guard.ts";
import { hasFinalizer, removeFinalizer } from "./finalizer.ts";
import type { Ownership } from "./ownership.ts";
import { deletesAsOrphan, Orphaning } from "./orphaning.ts";
import { retrying, withOperationOf, type Reporter } from "./reporting.ts";
import type { KubeClients } from "../kube/clients.ts";
import type { Logger } from "../base/log.ts";
import type { PlanStore } from "../pulumi/plans.ts";
import { describeChanges } from "../pulumi/preview-steps.ts";
import { updateMessage } from "../pulumi/update-messages.ts";
import type { Backoff, HandlerResult } from "./queue.ts";
import { OperationInterrupted, StackBusy } from "../pulumi/stack-errors.ts";
import type { StackDriver } from "../pulumi/stacks.ts";
import { stackStatusOf } from "./status.ts";
import { actingUser, explainedFailure, type Tenancy } from "./tenancy.ts";
import { namespaceTerminating } from "../kube/namespaces.ts";

/** Destroy attempts in a terminating namespace before the stack is forgotten instead. */
const terminatingNamespaceAttempts = 3;

export interface DeletionDeps {
  readonly clients: KubeClients;
  readonly driver: StackDriver;
  readonly plans: PlanStore;
  readonly events: EventRecorder;
  readonly backoff: (key: string) => Backoff;
  readonly children: Children;
  readonly ownership: Ownership;
  readonly reporter: Reporter;
  readonly bindingGuard: BindingGuard;
  /** Tenant identities (tenancy.ts): the destroy acts as the object's ServiceAccount too. */
  readonly tenancy?: Tenancy | undefined;
}

export class Deletion {
  private readonly deps: DeletionDeps;
  private readonly orphaning: Orphaning;

  constructor(deps: DeletionDeps) {
    this.deps = deps;
    this.orphaning = new Orphaning(deps.clients, deps.tenancy);
  }

  /**
   * The object's Deployment, for the status only: a kind that can no longer make its children from
   * the spec (kind-refusal.ts) is still destroyed, and that is said at warn.
   */
  private async deploymentOf(object: Workload, log: Logger): Promise<V1Deployment | undefined> {
    try {
      return (await this.deps.children.observe(object)).deployment;
    } catch (error) {
      log.warn("the children could not be read for the status; destroying the stack all the same", { error: error instanceof Error ? error.message : String(error) });
      return undefined;
    }
  }

  async finalize(object: Workload, stack: string, key: string, log: Logger): Promise<HandlerResult> {
    if (!hasFinalizer(object)) return;
    const deployment = await this.deploymentOf(object, log);
    if (deletesAsOrphan(object)) {
      await this.deps.reporter.report(object, deployment, { kind: "deleting", message: "leaving the children in place and removing the stack" }, stackStatusOf(object, stack)).catch(() => undefined);
      return this.orphan(object, stack, log);
    }
    await this.deps.reporter.report(object, deployment, { kind: "deleting", message: "destroying the stack" }, stackStatusOf(object, stack)).catch(() => undefined);
    const started = Date.now();
    let forgotten = false;
    try {
      await this.deps.ownership.dropForeign(object, stack, log);
      const operation = await this.deps.driver.destroy(stack, updateMessage({ generation: object.metadata.generation ?? 0, why: "deleted" }), actingUser(object, this.deps.tenancy));
      log.info("stack destroyed and removed", { operation: "destroy", durationMs: Date.now() - started, changes: operation?.resourceChanges });
      this.deps.events.record(object, "Normal", "StackDestroyed", operation ? `pulumi destroy: ${describeChanges(operation.resourceChanges, "done")}; stack removed` : "no stack to destroy");
    } catch (error) {
      const previous = stackStatusOf(object, stack);
      if (error instanceof StackBusy) return this.deps.reporter.locked(object, deployment, previous, error, log);
      if (error instanceof OperationInterrupted) throw error; // still Deleting: the next leader destroys it
      const message = await explainedFailure(this.deps.clients, object, this.deps.tenancy, error instanceof Error ? error.message : String(error));
      const { attempt, delayMs } = this.deps.backoff(key);
      if (attempt < terminatingNamespaceAttempts || !(await namespaceTerminating(this.deps.clients.core, object.metadata.namespace, log))) {
        log.error("pulumi destroy failed", { operation: "destroy", attempt, retryInMs: delayMs, error: message });
        this.deps.events.record(object, "Warning", "DestroyFailed", message);
        // Stalled until the next attempt, not Deleting for ever: the engine's words say what to fix.
        await this.deps.reporter.report(object, deployment, { kind: "stalled", reason: "DestroyFailed", message }, retrying(withOperationOf(previous, error), attempt, delayMs)).catch(() => undefined);
        throw new ReportedFailure("DestroyFailed", message);
      }
      // The namespace takes the children with it; a stuck finalizer would hold it forever.
      log.warn("namespace is terminating; forgetting the stack instead of destroying it", { error: message });
      this.deps.events.record(object, "Warning", "StackForgotten", `destroy failed ${attempt} times while the namespace is terminating; the stack state was removed and the namespace deletion removes the children`);
      await this.deps.driver.forget(stack);
      forgotten = true;
    }
    await this.release(object, stack);
    return forgotten ? { outcome: "forgotten" } : undefined;
  }

  /**
   * The children lose appstack's marks first, the stack goes next, the finalizer last: a kill at
   * any point leaves a step to run again, and the object, still there, runs it (a child already
   * unmarked is not changed again). Were the stack removed first, the children would keep their
   * ownerReference with nothing left to say which were the object's.
   */
  private async orphan(object: Workload, stack: string, log: Logger): Promise<HandlerResult> {
    const left = await this.orphaning.orphan(object, await this.deps.driver.recordedChildren(stack));
    await this.deps.driver.forget(stack, { keepHistory: true });
    const why = object.spec.deletionPolicy === "Orphan" ? "deletionPolicy Orphan" : "suspended";
    log.info("children left in place; stack removed without a destroy", { why, children: left });
    const named = left.length ? `${left.join(" and ")} left in place, without appstack's ownerReference, managed-by label and annotations` : "no children to leave";
    this.deps.events.record(object, "Normal", "ChildrenOrphaned", `${named} (${why}); the stack was removed without a destroy`);
    await this.release(object, stack);
    return undefined;
  }

  /** What ends every deletion: the plan, the finalizer, and what is remembered of the object. */
  private async release(object: Workload, stack: string): Promise<void> {
    await this.deps.plans.discard(stack);
    await removeFinalizer(this.deps.clients, object);
    // The last object of a namespace lets the operator's RBAC binding there go (binding-guard.ts).
    await this.deps.bindingGuard.releaseIfUnused(object.metadata.namespace);
    this.deps.reporter.forgetWritten(object.metadata.uid);
  }
}
