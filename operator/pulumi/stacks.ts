// The stack driver: runs one Pulumi operation on one object's stack, turns the engine's typed
// errors into decisions, and repairs what a killed operator leaves behind (stale locks, pending
// operations) so that no human has to. Its parts: selecting stacks (stack-selection.ts), the file
// backend's checkpoints (checkpoints.ts) and which stacks carry no pending operations
// (pending-operations.ts), edits of a stack's state (state-edits.ts), the repairs (recovery.ts),
// and every call's deadline (deadline-runner.ts).
import { LocalWorkspace, StackNotFoundError, type PulumiFn, type Stack } from "@pulumi/pulumi/automation/index.js";
import type { StackOperation } from "../../crds/types.ts";
import { engineGcPercent, providerPluginPath, type EngineSettings } from "./engine.ts";
import type { Logger } from "../base/log.ts";
import { StepCollector, type PlannedChanges } from "./preview-steps.ts";
import { summaryRecorder } from "./summaries.ts";
import { Checkpoints, type RecordedChild } from "./checkpoints.ts";
import { HistoryRetention } from "./history-retention.ts";
import { EngineIdentities, type IdentitySettings } from "./identities.ts";
import { DeadlineRunner, defaultOperationTimeoutMs, type OperationObserver } from "./deadline-runner.ts";
import { PendingOperations } from "./pending-operations.ts";
import { Recovery, type RecoverySettings } from "./recovery.ts";
import { StackSelection } from "./stack-selection.ts";
import { ProviderSlots } from "./provider-slots.ts";
import { StateEdits } from "./state-edits.ts";
import { StateIo } from "./state-io.ts";

/**
 * The options of an `up` or a preview that refreshes first. The refresh runs as the program
 * declares each resource (`--run-program`), with the provider the program's update then uses.
 * The engine's other way, refreshing every resource of the old state before the program runs,
 * configures one provider plugin from the state for the refresh and starts a second one when the
 * program declares its provider: two plugins, about 100 MiB more, for the whole run. A resource
 * the program no longer declares is then deleted without being refreshed first, which the
 * Kubernetes provider takes as done when it is already gone.
 */
function refreshing(refresh: boolean): { refresh: boolean; runProgram?: true } {
  return refresh ? { refresh, runProgram: true } : { refresh };
}

/** The update's message (update-messages.ts): why it ran, kept in the stack's history. */
function messageOf(message: string | undefined): { message?: string } {
  return message === undefined ? {} : { message };
}

export type StackDriverSettings = EngineSettings &
  RecoverySettings & {
    readonly workDir: string;
    readonly operationTimeoutMs?: number;
    /** Updates kept in each stack's history (history-retention.ts). */
    readonly historyLimit?: number;
    /** Asked before every Pulumi process starts: false (a sharded replica whose lease lapsed) stops the operation first. */
    readonly mayOperate?: () => boolean;
    /** Tenant identities on: how an engine acts as the user an operation names (`as`; identities.ts). */
    readonly identities?: IdentitySettings;
    /** Engines attach to this many Kubernetes providers kept alive (provider-slots.ts): one per operation run at once. Unset: each engine starts its own. */
    readonly providerSlots?: number;
    /** How long a kept provider may idle before it ends (provider-slots.ts; 30 s unless set). */
    readonly providerIdleMs?: number;
    /** The kept providers' binary: the engines' own plugin unless set (a test gives one that fails the start check). */
    readonly providerSlotBinary?: string;
  };

export class StackDriver {
  private readonly log: Logger;
  /** The state folder's files (checkpoints, locks, the template, the engines' home), read and written within the operation deadline. */
  private readonly io: StateIo;
  private readonly checkpoints: Checkpoints;
  private readonly pending: PendingOperations;
  private readonly recovery: Recovery;
  private readonly deadlines: DeadlineRunner;
  private readonly selection: StackSelection;
  private readonly retention: HistoryRetention;
  private readonly identities: EngineIdentities;
  private readonly providers: ProviderSlots | undefined;
  private readonly edits: StateEdits;

  constructor(
    settings: StackDriverSettings,
    log: Logger,
    observer?: OperationObserver,
  ) {
    this.log = log;
    const deadlineMs = settings.operationTimeoutMs ?? defaultOperationTimeoutMs;
    this.io = new StateIo(deadlineMs);
    this.checkpoints = new Checkpoints(settings.backendUrl, this.io);
    this.pending = new PendingOperations(this.checkpoints);
    this.recovery = new Recovery(settings, log, this.io, this.pending);
    this.deadlines = new DeadlineRunner(deadlineMs, log, (stack, why) => this.recovery.stopEngines(stack, why), observer, settings.mayOperate);
    this.retention = new HistoryRetention(settings.backendUrl, this.io, log, settings.historyLimit);
    this.selection = new StackSelection(settings, { log, io: this.io, checkpoints: this.checkpoints, pending: this.pending, recovery: this.recovery, deadlines: this.deadlines });
    this.identities = new EngineIdentities(settings.identities, settings.kubeconfig, this.io);
    this.edits = new StateEdits({ log, checkpoints: this.checkpoints, pending: this.pending, recovery: this.recovery, deadlines: this.deadlines, selection: this.selection });
    this.providers = settings.providerSlots ? new ProviderSlots({ binary: settings.providerSlotBinary ?? providerPluginPath(settings.pulumiHome, settings.binaries.kubernetesProvider.version), env: { GOGC: engineGcPercent }, keep: settings.providerSlots, ...(settings.providerIdleMs ? { idleMs: settings.providerIdleMs } : {}) }, log) : undefined;
  }

  /** One engine operation within its deadline, attached to a provider kept alive when there are (provider-slots.ts). */
  private runEngine(stack: Stack, kind: StackOperation["kind"], operation: Parameters<DeadlineRunner["run"]>[2], message?: string): Promise<StackOperation> {
    const run = () => this.deadlines.run(stack.name, kind, operation, message);
    return this.providers ? this.providers.attached((stack.workspace as LocalWorkspace).envVars, run) : run();
  }

  /** Runs an operation on a stack, which counts as clean again only when the operation succeeded. */
  private async tracked<T>(name: string, operation: () => Promise<T>): Promise<T> {
    try {
      const result = await operation();
      this.pending.markClean(name);
      return result;
    } catch (error) {
      this.pending.forget(name);
      // Removed from the backend behind our back: select (or create) it afresh next time.
      if (error instanceof StackNotFoundError) this.selection.deselect(name);
      throw await this.recovery.afterFailure(name, error);
    } finally {
      await this.retention.afterOperation(name);
    }
  }

  /**
   * up, refreshing first in the same engine run when asked (`up --refresh`: one process, not a
   * refresh and an up); with `plan`, the update may do nothing its saved plan does not say, and a
   * refresh runs before it on its own. With `as`, the engine's provider acts as that user (identities.ts).
   * Throws StackOperationFailed or StackBusy.
   */
  up(name: string, program: PulumiFn, options: { refresh: boolean; plan?: string; message?: string; as?: string }): Promise<StackOperation> {
    return this.deadlines.answered("up", async () => {
      const stack = await this.selection.select(name, program, "up");
      await this.identities.actAs(stack, options.as);
      const onOutput = this.engineOutput(name);
      return this.tracked(name, () =>
        this.recovery.unlocked(name, async () => {
          await this.edits.clearPendingOperations(stack, "up");
          // An approved plan was made against a refreshed state: refreshed apart, as when it was made.
          const separateRefresh = options.refresh && options.plan !== undefined;
          if (separateRefresh) await this.runRefresh(name, stack, options.message);
          return this.runEngine(stack, "up", async (signal) => {
            const onEvent = summaryRecorder(stack, "update");
            return (await stack.up({ onOutput, onEvent, signal, ...refreshing(options.refresh && !separateRefresh), ...(options.plan ? { plan: options.plan } : {}), ...messageOf(options.message) })).summary;
          }, options.message);
        }),
      );
    });
  }

  /**
   * A refresh alone: the stack's record follows the cluster, which it does not change (so it
   * needs no approval). What is left of an interrupted operation is cleared first.
   */
  refresh(name: string, program: PulumiFn, message?: string, as?: string): Promise<StackOperation> {
    return this.deadlines.answered("refresh", async () => {
      const stack = await this.selection.select(name, program, "refresh");
      await this.identities.actAs(stack, as);
      return this.tracked(name, () =>
        this.recovery.unlocked(name, async () => {
          await this.edits.clearPendingOperations(stack, "refresh");
          return this.runRefresh(name, stack, message);
        }),
      );
    });
  }

  private runRefresh(name: string, stack: Stack, message: string | undefined): Promise<StackOperation> {
    return this.runEngine(stack, "refresh", async (signal) => (await stack.refresh({ onOutput: this.engineOutput(name), onEvent: summaryRecorder(stack, "refresh"), signal, ...messageOf(message) })).summary, message);
  }

  /**
   * What `up` would do, changing nothing (the file backend does not even lock for a preview).
   * With `refresh`, against the live resources rather than the recorded state; with `plan`, the
   * update plan is saved there. `onOutput` receives the diff as the Pulumi CLI shows it.
   */
  preview(name: string, program: PulumiFn, options: { refresh: boolean; plan?: string; onOutput?: (out: string) => void; as?: string }): Promise<PlannedChanges & { operation: StackOperation }> {
    return this.deadlines.answered("preview", async () => {
      const stack = await this.selection.select(name, program, "preview");
      await this.identities.actAs(stack, options.as);
      const collector = new StepCollector();
      const onOutput = options.onOutput ?? this.engineOutput(name);
      try {
        const operation = await this.runEngine(stack, "preview", async (signal) => {
          const result = await stack.preview({ onOutput, signal, onEvent: collector.onEvent, diff: true, ...refreshing(options.refresh), ...(options.plan ? { plan: options.plan } : {}) });
          return { resourceChanges: result.changeSummary };
        });
        return { ...collector.result(), operation };
      } catch (error) {
        if (error instanceof StackNotFoundError) this.selection.deselect(name);
        throw await this.recovery.afterFailure(name, error);
      }
    });
  }

  /** The children the stack's state records (state-edits.ts). */
  recordedChildren(name: string): Promise<RecordedChild[]> {
    return this.edits.recordedChildren(name);
  }

  /** Removes resources from the stack's state without touching the cluster (state-edits.ts). */
  dropResources(name: string, resources: readonly RecordedChild[]): Promise<void> {
    return this.edits.dropResources(name, resources);
  }

  /** destroy, then remove the stack. Undefined when there was no stack (nothing to do). */
  destroy(name: string, message?: string, as?: string): Promise<StackOperation | undefined> {
    return this.deadlines.answered("destroy", async () => {
      const stack = await this.selection.existing(name);
      if (!stack) {
        // A `stack rm` killed after removing the stack but before unlocking it leaves a lock behind.
        await this.recovery.breakStaleLocks(name);
        return undefined;
      }
      await this.identities.actAs(stack, as);
      const onOutput = this.engineOutput(name);
      const result = await this.tracked(name, () =>
        this.recovery.unlocked(name, async () => {
          await this.edits.clearPendingOperations(stack, "destroy");
          return this.runEngine(stack, "destroy", async (signal) => (await stack.destroy({ onOutput, onEvent: summaryRecorder(stack, "destroy"), signal, ...messageOf(message) })).summary, message);
        }),
      );
      await this.retention.beforeRemoval(name);
      await this.deadlines.command("destroy", name, "stack rm", () => stack.workspace.removeStack(name));
      await this.retention.afterRemoval(name);
      this.forgetSelection(name);
      return result;
    });
  }

  /**
   * Cleans up after a predecessor killed mid-operation: breaks the stale locks on every stack (even
   * one that needs no further operation), removes the attribute files its engines tore, and kills
   * the plugins they left running.
   */
  async cleanUpAfterPredecessor(): Promise<void> {
    await this.recovery.sweep();
  }

  /** Readies what the first operations would otherwise wait for (StackSelection.warmUp); logs a failure, never throws. */
  async warmUp(): Promise<void> {
    await this.selection.warmUp();
  }

  /**
   * Stops every operation of this process at once (a handover: past the shutdown grace, or the
   * lease lost): its engines and their plugins are killed and their locks broken, so that no
   * engine of this replica writes a stack once another replica may lead.
   */
  async killAll(): Promise<void> {
    this.deadlines.handOver();
    await this.recovery.stopEngines(undefined, "this replica is handing over");
    this.providers?.close();
  }

  /** Stops the providers kept alive, once no operation runs any more (the queue has shut down). */
  close(): void {
    this.providers?.close();
  }

  /** The provider processes kept alive and running now (tests). */
  get providerPids(): number[] {
    return this.providers?.pids ?? [];
  }

  /** Whether the stack exists; cheap (no Pulumi process) for the file and PostgreSQL backends. */
  exists(name: string): Promise<boolean> {
    return this.selection.exists(name);
  }

  /**
   * Whether the stack's state records resources (a stack a preview made records none). The file
   * backend's checkpoint is read directly; for other backends, whether the stack exists.
   */
  async hasResources(name: string): Promise<boolean> {
    return (await this.checkpoints.recordsResources(name)) ?? this.exists(name);
  }

  /**
   * Whether an engine killed mid-operation left pending operations in the stack's state, which
   * only the next operation on it clears. Known for the file backend (its checkpoint, read
   * directly) and for stacks this process ran; other backends' stacks are cleared before their
   * next operation, as always.
   */
  async hasPendingOperations(name: string): Promise<boolean> {
    return (await this.pending.known(name)) === true;
  }

  /**
   * Removes a stack's state without touching the cluster (the namespace is being deleted, or the
   * children are orphaned). With `keepHistory`, its history is kept aside first, as a destroy's is.
   */
  async forget(name: string, options: { keepHistory?: boolean } = {}): Promise<void> {
    const ws = await LocalWorkspace.create(await this.selection.workspace("destroy"));
    if (options.keepHistory) await this.retention.beforeRemoval(name);
    await this.deadlines.command("destroy", name, "stack rm", () => ws.removeStack(name, { force: true })).catch((error: unknown) => {
      if (!(error instanceof StackNotFoundError)) throw error;
    });
    await this.retention.afterRemoval(name);
    this.forgetSelection(name);
  }

  /**
   * Another replica runs the stack from now on (its object left this replica's share): what this
   * process knows of it, that it carries no pending operations and how it was selected, may be
   * untrue when the object comes back.
   */
  letGo(name: string): void {
    this.forgetSelection(name);
  }

  /** The engine's own output, kept at debug level under the stack's name. */
  private engineOutput(name: string): (out: string) => void {
    return (out) => this.log.debug(out.trimEnd(), { stack: name });
  }

  private forgetSelection(name: string): void {
    this.selection.deselect(name);
    this.pending.forget(name);
  }
}
