// Reading and editing a stack's recorded state without running its program: the children it
// records, resources dropped from it, and the pending operations an interrupted engine left in it.
// Each is a `stack export`, an edit and a `stack import` within the operation deadline (the file
// backend's checkpoint is read directly where that is enough: no Pulumi process).
import type { Stack } from "@pulumi/pulumi/automation/index.js";
import { childKindNamed } from "../../components/kinds.ts";
import type { StackOperation } from "../../crds/types.ts";
import type { Logger } from "../base/log.ts";
import { childrenIn, exportedDeployment, type Checkpoints, type RecordedChild } from "./checkpoints.ts";
import type { DeadlineRunner } from "./deadline-runner.ts";
import type { PendingOperations } from "./pending-operations.ts";
import type { Recovery } from "./recovery.ts";
import type { StackSelection } from "./stack-selection.ts";

export interface StateEditsDeps {
  readonly log: Logger;
  readonly checkpoints: Checkpoints;
  readonly pending: PendingOperations;
  readonly recovery: Recovery;
  readonly deadlines: DeadlineRunner;
  readonly selection: StackSelection;
}

export class StateEdits {
  private readonly deps: StateEditsDeps;

  constructor(deps: StateEditsDeps) {
    this.deps = deps;
  }

  /** Interrupted operations leave pending operations in the state; SSA apply makes a re-run safe. */
  async clearPendingOperations(stack: Stack, kind: StackOperation["kind"]): Promise<void> {
    const { pending, deadlines, log } = this.deps;
    // Known without a process (`stack export`) for the file backend: after a restart, every stack
    // would otherwise cost one more.
    if ((await pending.known(stack.name)) === false) return;
    const state = await deadlines.command(kind, stack.name, "stack export", () => stack.exportStack());
    const deployment = exportedDeployment(state);
    if (!deployment?.pending_operations?.length) return;
    log.warn("clearing pending operations left by an interrupted update", { stack: stack.name, count: deployment.pending_operations.length });
    deployment.pending_operations = [];
    await deadlines.command(kind, stack.name, "stack import", () => stack.importStack(state));
  }

  /**
   * The children the stack's state records: what its next `up` may update or delete, and its
   * `destroy` deletes. The file backend's checkpoint is read directly; other backends' state is
   * exported.
   */
  recordedChildren(name: string): Promise<RecordedChild[]> {
    const { checkpoints, selection, deadlines } = this.deps;
    return deadlines.answered("up", async () => {
      const recorded = await checkpoints.recordedChildren(name);
      if (recorded) return recorded;
      const stack = await selection.existing(name);
      if (!stack) return [];
      const state = await deadlines.command("up", name, "stack export", () => stack.exportStack());
      return childrenIn(exportedDeployment(state)?.resources ?? []);
    });
  }

  /**
   * Removes resources from the stack's state without touching the cluster: objects of those names
   * that someone else made are not the stack's to update or delete any more.
   */
  dropResources(name: string, resources: readonly RecordedChild[]): Promise<void> {
    const { selection, recovery, deadlines, log } = this.deps;
    return deadlines.answered("destroy", async () => {
      const stack = await selection.existing(name);
      if (!stack) return;
      const drop = new Set(resources.map((r) => `${childKindNamed(r.kind).resourceType} ${r.namespace}/${r.name}`));
      await recovery.unlocked(name, async () => {
        const state = await deadlines.command("destroy", name, "stack export", () => stack.exportStack());
        const deployment = exportedDeployment(state);
        const kept = (deployment?.resources ?? []).filter((r) => !drop.has(`${r.type} ${r.id ?? ""}`));
        if (!deployment?.resources || kept.length === deployment.resources.length) return;
        log.warn("dropping resources that are no longer the stack's from its state", { stack: name, dropped: deployment.resources.length - kept.length });
        deployment.resources = kept;
        await deadlines.command("destroy", name, "stack import", () => stack.importStack(state));
      });
    });
  }
}
