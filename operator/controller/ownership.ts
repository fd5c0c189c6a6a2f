// What runs before an engine operation so that it writes only what is the object's own: the
// fields others edited handed to appstack's field manager (for a repair), and objects the stack's
// state records but that are someone else's now dropped from that state, untouched.
import type { Workload } from "../../crds/types.ts";
import type { Children, Observed } from "./children.ts";
import type { Pending } from "./drift.ts";
import type { EventRecorder } from "./events.ts";
import type { Logger } from "../base/log.ts";
import type { StackDriver } from "../pulumi/stacks.ts";

export interface OwnershipDeps {
  readonly children: Children;
  readonly driver: StackDriver;
  readonly events: EventRecorder;
}

export class Ownership {
  private readonly deps: OwnershipDeps;

  constructor(deps: OwnershipDeps) {
    this.deps = deps;
  }

  /**
   * Drift made by imperative edits becomes appstack's to undo (metadata only: who owns which field),
   * so that the repair, or the preview of it, can apply the manifest over it. For the repair itself
   * (`remove`), what others added, which Pulumi cannot see, is removed too; returns from how many children.
   */
  async handOver(object: Workload, decision: Pending, observed: Observed, log: Logger, remove = false): Promise<number> {
    if (decision.action !== "repair") return 0;
    const handed = await this.deps.children.handOverEdits(object, observed);
    if (handed) log.info("imperative edits handed over to appstack's field manager", { children: handed });
    const removed = remove ? await this.deps.children.removeAdditions(object, observed) : 0;
    if (removed) log.info("additions removed by a server-side apply of the manifest", { children: removed });
    return removed;
  }

  /**
   * Every child the stack's state records is checked before the engine may update or delete it,
   * not only those the spec wants now: a child deleted by hand whose name someone else's object
   * took since (then dropped from the spec, or its object deleted) would otherwise be deleted by
   * `up` or `destroy` as the stack's own. Such an object leaves the stack's state, untouched.
   */
  async dropForeign(object: Workload, stack: string, log: Logger): Promise<void> {
    const foreign = await this.deps.children.foreignAmong(object, await this.deps.driver.recordedChildren(stack));
    if (!foreign.length) return;
    await this.deps.driver.dropResources(stack, foreign.map((f) => f.child));
    const named = foreign.map(({ child, controller }) => `${child.kind} ${child.namespace}/${child.name} (${controller ? `controlled by ${controller}` : "not created by appstack"})`);
    log.warn("the stack's state names objects that are not this object's; dropped from the state, left untouched", { dropped: named });
    this.deps.events.record(object, "Warning", "ForeignResourceDropped", `${named.join(" and ")} took the name of a child this ${object.kind} had; it was dropped from the stack's state, and appstack neither changes nor deletes it`);
  }
}
