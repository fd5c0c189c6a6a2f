// The stack driver: runs one Pulumi operation on one object's stack, turns the engine's typed
// errors into decisions, and repairs what a killed operator leaves behind (stale locks, pending
// operations) so that no human has to.
import {
  ConcurrentUpdateError,
  LocalWorkspace,
  StackAlreadyExistsError,
  StackNotFoundError,
  type PulumiFn,
  Stack,
  type UpdateSummary,
} from "@pulumi/pulumi/automation/index.js";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import yaml from "js-yaml";
import { childResourceTypes } from "../../components/workload.ts";
import type { StackOperation } from "../../crds/types.ts";
import { fileBackendRoot, forgetPulumiCommand, workspaceOptions, type EngineSettings } from "./engine.ts";
import type { Logger } from "../manager/log.ts";
import { StepCollector, type PlannedChanges } from "./preview-steps.ts";
import { answerFromEvents, summaryRecorder } from "./summaries.ts";
import { killEngines, killOrphanedPlugins } from "./orphans.ts";
import { breakAllStaleLocks, breakStaleLocks, type HolderCheck } from "./stack-locks.ts";
import { repairTornAttributes } from "./torn-writes.ts";
import { createFromTemplate, loadTemplate, saveTemplate } from "./new-stacks.ts";
import { secretsProviderUrl } from "./key-service.ts";
import { StateFolderUnanswered, StateIo } from "./state-io.ts";
import { timedOut, withinDeadline } from "../manager/deadline.ts";

export const projectName = "appstack";
/** The stack the template of new stacks is made from: no object's (theirs are `<kind>.<namespace>.<name>`). */
const templateStackName = "appstack-new-stack-template";

/** How long one engine operation may take unless configured (APPSTACK_OPERATION_TIMEOUT_SECONDS). */
export const defaultOperationTimeoutMs = 300_000;
const maxKillGraceMs = 30_000;
const cancelledWhy = "it did not stop when its deadline cancelled it";

/** A child of an object as a stack's state records it. */
export interface RecordedChild {
  readonly kind: "Deployment" | "Service";
  readonly namespace: string;
  readonly name: string;
}

/** A resource of a stack's state, as far as appstack reads it. */
interface StateResource {
  readonly type: string;
  /** For a Kubernetes resource, `<namespace>/<name>`. */
  readonly id?: string;
}


function childrenIn(resources: readonly StateResource[]): RecordedChild[] {
  return resources.flatMap((resource) => {
    const kind = (Object.keys(childResourceTypes) as RecordedChild["kind"][]).find((k) => childResourceTypes[k] === resource.type);
    const [namespace, name] = (resource.id ?? "").split("/");
    return kind && namespace && name ? [{ kind, namespace, name }] : [];
  });
}

/** A work folder stacks can share: Pulumi.yaml is written once here, never per operation. */
export async function prepareWorkDir(workDir: string, backendUrl: string, io: StateIo): Promise<string> {
  await io.makeFolder(workDir);
  await io.write(join(workDir, "Pulumi.yaml"), yaml.dump({ name: projectName, runtime: "nodejs", backend: { url: backendUrl } }));
  return workDir;
}

/** The operation failed; the message is the engine's own. */
export class StackOperationFailed extends Error {
  readonly operation: StackOperation;

  constructor(operation: StackOperation) {
    super(operation.message ?? `${operation.kind} failed`);
    this.operation = operation;
  }
}

/** Another live update holds the stack: try again later. */
export class StackBusy extends Error {}

/** The operation did not finish within its deadline: it was cancelled (killed if it had to be) and its stack unlocked. */
export class OperationTimedOut extends StackOperationFailed {
  readonly deadlineMs: number;

  constructor(
    operation: StackOperation,
    deadlineMs: number,
  ) {
    super(operation);
    this.deadlineMs = deadlineMs;
  }
}

/**
 * This replica stopped the operation itself, handing over (past its shutdown grace, or its lease
 * lost): nothing failed, and the next leader carries on with the object.
 */
export class OperationInterrupted extends Error {}

/**
 * The engine's diagnosis in a line or two: its `error:` lines, without the engine's own framing
 * ("update failed", resource URNs), each once.
 */
export function engineMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  // The provider wraps its errors as "N error(s) occurred:" with one "* reason" line each.
  const framing = /^(update failed|preview failed|(Preview failed: )?\d+ errors? occurred:?)$/i;
  const reasons = text
    .split("\n")
    .map((line) => (/^\s*\* (.*)$/.exec(line)?.[1] ?? /error: (.*)$/.exec(line)?.[1])?.trim())
    .filter((reason): reason is string => !!reason && !framing.test(reason))
    .map((reason) => reason.replace(/resource "urn:[^"]*" /, ""));
  const unique = [...new Set(reasons)];
  const fallback = text.split("\n").map((l) => l.trim()).filter(Boolean).slice(-3);
  return (unique.length ? unique : fallback).slice(0, 3).join("; ").slice(0, 2000);
}

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

/** What an operation reports: an update's summary, or a preview's counts. */
type Outcome = Pick<UpdateSummary, "resourceChanges"> & { readonly result?: UpdateSummary["result"] };

function report(kind: StackOperation["kind"], started: Date, summary?: Outcome, error?: unknown): StackOperation {
  return {
    kind,
    result: error === undefined && summary?.result !== "failed" ? "succeeded" : "failed",
    startTime: started.toISOString(),
    endTime: new Date().toISOString(),
    ...(summary?.resourceChanges ? { resourceChanges: { ...summary.resourceChanges } } : {}),
    ...(error !== undefined ? { message: engineMessage(error) } : {}),
  };
}

/** Sees every engine operation start and finish (metrics). */
export interface OperationObserver {
  started(): void;
  finished(kind: StackOperation["kind"], result: StackOperation["result"], seconds: number): void;
}

export type StackDriverSettings = EngineSettings & {
  readonly workDir: string;
  readonly operationTimeoutMs?: number;
  /** Proves another host's engines gone (another replica's pod); without it, other hosts' locks stay. */
  readonly otherHost?: HolderCheck;
};

export class StackDriver {
  /** Stacks selected once in this process: selecting again would start a Pulumi process per operation. */
  private readonly stacks = new Map<string, Stack>();
  /**
   * Stacks known to carry no pending operations. Only an operation interrupted outside this
   * process (a crash before it started) or a failed one here can leave some.
   */
  private readonly clean = new Set<string>();

  /** Set by killAll: every failure from then on is the kill's doing. */
  private handingOver = false;

  private readonly settings: StackDriverSettings;
  private readonly log: Logger;
  private readonly observer?: OperationObserver;
  /** The state folder's files (checkpoints, locks, the template, the engines' home), read and written within the operation deadline. */
  private readonly io: StateIo;

  constructor(
    settings: StackDriverSettings,
    log: Logger,
    observer?: OperationObserver,
  ) {
    this.settings = settings;
    this.log = log;
    this.observer = observer;
    this.io = new StateIo(this.deadlineMs());
  }

  /**
   * The workspace of a command of `kind`. The first call of a process checks the CLI (`pulumi
   * version`), which a stalled disk can hold as long as any other command: within the deadline too.
   */
  private async workspace(kind: StackOperation["kind"]) {
    // The shared work folder already holds Pulumi.yaml: not passing project settings keeps
    // parallel operations from rewriting it under each other.
    const killCheck = () => {
      forgetPulumiCommand(this.settings.cliRoot);
      killEngines("version", "pulumi version did not finish within its deadline", this.log);
    };
    const { projectSettings, ...options } = await this.command(kind, undefined, "version", () => workspaceOptions(this.settings, projectName, this.io), killCheck);
    return { ...options, workDir: this.settings.workDir };
  }

  /** Runs `operation`, breaking a stale lock once if a dead operator left one behind. */
  private async unlocked<T>(name: string, operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (!(error instanceof ConcurrentUpdateError)) throw error;
      const sweep = await this.breakStaleLocks(name);
      if (sweep.held) throw new StackBusy(`stack ${name} is locked by ${sweep.held}`);
      if (!sweep.removed) throw new StackBusy(`stack ${name} is locked by a running update`);
      return operation();
    }
  }

  private breakStaleLocks(name: string) {
    return breakStaleLocks(this.settings.backendUrl, projectName, name, this.log, this.io, this.settings.otherHost);
  }

  private async select(name: string, program: PulumiFn, kind: StackOperation["kind"]): Promise<Stack> {
    const cached = this.stacks.get(name);
    if (cached) {
      (cached.workspace as LocalWorkspace).program = program;
      return cached;
    }
    try {
      return await this.selectAfresh(name, program, kind);
    } catch (error) {
      throw await this.afterFailure(name, error);
    }
  }

  private async selectAfresh(name: string, program: PulumiFn, kind: StackOperation["kind"]): Promise<Stack> {
    const checkpoint = this.checkpointBase(name);
    let stack: Stack;
    if (!checkpoint) {
      const workspace = await this.workspace(kind);
      stack = await this.command(kind, name, "stack select", () => LocalWorkspace.createOrSelectStack({ stackName: name, projectName, program }, workspace));
    } else if (await this.exists(name)) stack = await this.selectKnown(name, program, kind);
    else stack = await this.createNew(name, program, `${checkpoint}.json`, kind);
    this.stacks.set(name, answerFromEvents(stack));
    return stack;
  }

  /**
   * A stack of the file backend known to be new (cheap to know): made from the template (no
   * Pulumi process) once the first one made by `stack init` gave it, with no pending operations.
   */
  private async createNew(name: string, program: PulumiFn, checkpointPath: string, kind: StackOperation["kind"]): Promise<Stack> {
    const template = await loadTemplate(this.settings.workDir, secretsProviderUrl, this.io);
    if (template) {
      await createFromTemplate(template, this.settings.workDir, checkpointPath, name, this.io);
      this.clean.add(name);
      return this.selectKnown(name, program, kind);
    }
    const args = { stackName: name, projectName, program };
    const workspace = await this.workspace(kind);
    try {
      const stack = await this.command(kind, name, "stack init", () => LocalWorkspace.createStack(args, workspace));
      this.clean.add(name);
      await this.keepAsTemplate(name, checkpointPath);
      return stack;
    } catch (error) {
      // Stored under a layout the file check does not know: it exists after all.
      if (!(error instanceof StackAlreadyExistsError)) throw error;
      return this.command(kind, name, "stack select", () => LocalWorkspace.selectStack(args, workspace));
    }
  }

  private async keepAsTemplate(name: string, checkpointPath: string): Promise<void> {
    try {
      if (!(await saveTemplate(this.settings.workDir, checkpointPath, name, this.io))) this.log.warn("a new stack's files are not what appstack expects: every new stack costs a `pulumi stack init`", { stack: name });
    } catch (error) {
      this.log.warn("could not keep a new stack's files as the template of new stacks", { stack: name, error: String(error) });
    }
  }

  /**
   * A stack of the file backend that the file check found: `pulumi stack select` would spend a
   * process only to say so again, and every operation names its stack (`--stack`) anyway.
   */
  private async selectKnown(name: string, program: PulumiFn, kind: StackOperation["kind"]): Promise<Stack> {
    const workspace = await LocalWorkspace.create({ ...(await this.workspace(kind)), program });
    workspace.selectStack = () => Promise.resolve();
    return Stack.select(name, workspace);
  }

  /** Interrupted operations leave pending operations in the state; SSA apply makes a re-run safe. */
  private async clearPendingOperations(stack: Stack, kind: StackOperation["kind"]): Promise<void> {
    // Known without a process (`stack export`) for the file backend: after a restart, every stack
    // would otherwise cost one more.
    if ((await this.pendingOperationsKnown(stack.name)) === false) return;
    const state = await this.command(kind, stack.name, "stack export", () => stack.exportStack());
    const deployment = state.deployment as { pending_operations?: unknown[] } | undefined;
    if (!deployment?.pending_operations?.length) return;
    this.log.warn("clearing pending operations left by an interrupted update", { stack: stack.name, count: deployment.pending_operations.length });
    deployment.pending_operations = [];
    await this.command(kind, stack.name, "stack import", () => stack.importStack(state));
  }

  /** Runs an operation on a stack, which counts as clean again only when the operation succeeded. */
  private async tracked<T>(name: string, operation: () => Promise<T>): Promise<T> {
    try {
      const result = await operation();
      this.clean.add(name);
      return result;
    } catch (error) {
      this.clean.delete(name);
      // Removed from the backend behind our back: select (or create) it afresh next time.
      if (error instanceof StackNotFoundError) this.stacks.delete(name);
      throw await this.afterFailure(name, error);
    }
  }

  /**
   * A failed operation or stack creation can leave a lock behind that no engine holds: one whose
   * write the disk cut short (a full state folder leaves an empty lock file, which made every later
   * `stack init` fail with "unexpected end of JSON input" after space returned), or an attributes
   * file a killed engine tore (torn-writes.ts). A lock is broken only when its holder is gone.
   */
  private async afterFailure(name: string, error: unknown): Promise<unknown> {
    if (error instanceof ConcurrentUpdateError) return error;
    await repairTornAttributes(this.settings.backendUrl, projectName, this.log, this.io, name);
    await this.breakStaleLocks(name);
    return error;
  }

  /**
   * up, refreshing first in the same engine run when asked (`up --refresh`: one process, not a
   * refresh and an up); with `plan`, the update may do nothing its saved plan does not say, and a
   * refresh runs before it on its own.
   * Throws StackOperationFailed or StackBusy.
   */
  up(name: string, program: PulumiFn, options: { refresh: boolean; plan?: string }): Promise<StackOperation> {
    return this.answered("up", async () => {
      const stack = await this.select(name, program, "up");
      const onOutput = this.engineOutput(name);
      return this.tracked(name, () =>
        this.unlocked(name, async () => {
          await this.clearPendingOperations(stack, "up");
          // An approved plan was made against a refreshed state: refreshed apart, as when it was made.
          const separateRefresh = options.refresh && options.plan !== undefined;
          if (separateRefresh) await this.runRefresh(name, stack);
          return this.run(name, "up", async (signal) => {
            const onEvent = summaryRecorder(stack, "update");
            return (await stack.up({ onOutput, onEvent, signal, ...refreshing(options.refresh && !separateRefresh), ...(options.plan ? { plan: options.plan } : {}) })).summary;
          });
        }),
      );
    });
  }

  /**
   * A refresh alone: the stack's record follows the cluster, which it does not change (so it
   * needs no approval). What is left of an interrupted operation is cleared first.
   */
  refresh(name: string, program: PulumiFn): Promise<StackOperation> {
    return this.answered("refresh", async () => {
      const stack = await this.select(name, program, "refresh");
      return this.tracked(name, () =>
        this.unlocked(name, async () => {
          await this.clearPendingOperations(stack, "refresh");
          return this.runRefresh(name, stack);
        }),
      );
    });
  }

  private runRefresh(name: string, stack: Stack): Promise<StackOperation> {
    return this.run(name, "refresh", async (signal) => (await stack.refresh({ onOutput: this.engineOutput(name), onEvent: summaryRecorder(stack, "refresh"), signal })).summary);
  }

  /**
   * What `up` would do, changing nothing (the file backend does not even lock for a preview).
   * With `refresh`, against the live resources rather than the recorded state; with `plan`, the
   * update plan is saved there. `onOutput` receives the diff as the Pulumi CLI shows it.
   */
  preview(name: string, program: PulumiFn, options: { refresh: boolean; plan?: string; onOutput?: (out: string) => void }): Promise<PlannedChanges & { operation: StackOperation }> {
    return this.answered("preview", async () => {
      const stack = await this.select(name, program, "preview");
      const collector = new StepCollector();
      const onOutput = options.onOutput ?? this.engineOutput(name);
      try {
        const operation = await this.run(name, "preview", async (signal) => {
          const result = await stack.preview({ onOutput, signal, onEvent: collector.onEvent, diff: true, ...refreshing(options.refresh), ...(options.plan ? { plan: options.plan } : {}) });
          return { resourceChanges: result.changeSummary };
        });
        return { ...collector.result(), operation };
      } catch (error) {
        if (error instanceof StackNotFoundError) this.stacks.delete(name);
        throw await this.afterFailure(name, error);
      }
    });
  }

  /** The stack for an operation that runs no program (destroy, state edits); undefined when it does not exist. */
  private async existing(name: string): Promise<Stack | undefined> {
    try {
      const cached = this.stacks.get(name);
      if (cached) return cached;
      const program = () => Promise.resolve();
      if (!this.checkpointBase(name)) {
        const workspace = await this.workspace("destroy");
        return answerFromEvents(await this.command("destroy", name, "stack select", () => LocalWorkspace.selectStack({ stackName: name, projectName, program }, workspace)));
      }
      return (await this.exists(name)) ? answerFromEvents(await this.selectKnown(name, program, "destroy")) : undefined;
    } catch (error) {
      if (!(error instanceof StackNotFoundError)) throw await this.afterFailure(name, error);
      return undefined;
    }
  }

  /**
   * The children the stack's state records: what its next `up` may update or delete, and its
   * `destroy` deletes. The file backend's checkpoint is read directly; other backends' state is
   * exported.
   */
  recordedChildren(name: string): Promise<RecordedChild[]> {
    return this.answered("up", async () => {
      const base = this.checkpointBase(name);
      if (base && !(await this.io.exists(`${base}.json.gz`))) return childrenIn((await this.checkpointFile(base))?.latest?.resources ?? []);
      const stack = await this.existing(name);
      if (!stack) return [];
      const state = await this.command("up", name, "stack export", () => stack.exportStack());
      return childrenIn((state.deployment as { resources?: StateResource[] } | undefined)?.resources ?? []);
    });
  }

  /**
   * Removes resources from the stack's state without touching the cluster: objects of those names
   * that someone else made are not the stack's to update or delete any more.
   */
  dropResources(name: string, resources: readonly RecordedChild[]): Promise<void> {
    return this.answered("destroy", async () => {
      const stack = await this.existing(name);
      if (!stack) return;
      const drop = new Set(resources.map((r) => `${childResourceTypes[r.kind]} ${r.namespace}/${r.name}`));
      await this.unlocked(name, async () => {
        const state = await this.command("destroy", name, "stack export", () => stack.exportStack());
        const deployment = state.deployment as { resources?: StateResource[] } | undefined;
        const kept = (deployment?.resources ?? []).filter((r) => !drop.has(`${r.type} ${r.id ?? ""}`));
        if (!deployment?.resources || kept.length === deployment.resources.length) return;
        this.log.warn("dropping resources that are no longer the stack's from its state", { stack: name, dropped: deployment.resources.length - kept.length });
        deployment.resources = kept;
        await this.command("destroy", name, "stack import", () => stack.importStack(state));
      });
    });
  }

  /** destroy, then remove the stack. Undefined when there was no stack (nothing to do). */
  destroy(name: string): Promise<StackOperation | undefined> {
    return this.answered("destroy", async () => {
      const stack = await this.existing(name);
      if (!stack) {
        // A `stack rm` killed after removing the stack but before unlocking it leaves a lock behind.
        await this.breakStaleLocks(name);
        return undefined;
      }
      const onOutput = this.engineOutput(name);
      const result = await this.tracked(name, () =>
        this.unlocked(name, async () => {
          await this.clearPendingOperations(stack, "destroy");
          return this.run(name, "destroy", async (signal) => (await stack.destroy({ onOutput, onEvent: summaryRecorder(stack, "destroy"), signal })).summary);
        }),
      );
      await this.command("destroy", name, "stack rm", () => stack.workspace.removeStack(name));
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
    await this.sweep();
  }

  /**
   * Readies, before any object is reconciled, what the first operations would otherwise wait for:
   * the CLI's version check, the key service and, on a file backend that has none yet, the
   * template of new stacks, made by `stack init` of a stack of its own that is removed again
   * (measured by hand: the first two new Apps took 1.6 s where later ones took 0.6 s). A failure
   * only leaves that work to the first new stack, so it is logged, not thrown.
   */
  async warmUp(): Promise<void> {
    const name = templateStackName;
    const checkpoint = this.checkpointBase(name);
    try {
      const workspace = await this.workspace("up");
      if (!checkpoint || (await loadTemplate(this.settings.workDir, secretsProviderUrl, this.io))) return;
      // Left over if a kill came between its init and its removal: made again from scratch.
      const stack = await this.command("up", name, "stack init", () => LocalWorkspace.createOrSelectStack({ stackName: name, projectName, program: () => Promise.resolve() }, workspace));
      await this.keepAsTemplate(name, `${checkpoint}.json`);
      await this.command("up", name, "stack rm", () => stack.workspace.removeStack(name));
    } catch (error) {
      this.log.warn("could not make the template of new stacks ahead of time", { error: String(error) });
    }
  }

  /**
   * Stops every operation of this process at once (a handover: past the shutdown grace, or the
   * lease lost): its engines and their plugins are killed and their locks broken, so that no
   * engine of this replica writes a stack once another replica may lead.
   */
  async killAll(): Promise<void> {
    this.handingOver = true;
    await this.stopEngines(undefined, "this replica is handing over");
  }

  /** Kills this process's engines on `stack` (or on every stack), then what they leave: plugins and locks. */
  private async stopEngines(stack: string | undefined, why: string): Promise<void> {
    const killed = killEngines(stack, why, this.log);
    if (stack) this.clean.delete(stack);
    // The plugins are adopted by init a moment after their engine dies.
    if (killed) await sleep(300);
    await this.sweep(stack);
  }

  /** Kills the plugins no engine of ours owns any more; removes torn attribute files and breaks stale locks of `stack` (or of every stack). */
  private async sweep(stack?: string): Promise<void> {
    killOrphanedPlugins(this.settings.pulumiHome, this.log);
    await repairTornAttributes(this.settings.backendUrl, projectName, this.log, this.io, stack);
    if (stack) await this.breakStaleLocks(stack);
    else await breakAllStaleLocks(this.settings.backendUrl, projectName, this.log, this.io, this.settings.otherHost);
  }

  /** Where a file backend keeps a stack's checkpoint (without its suffix); undefined for other backends. */
  private checkpointBase(name: string): string | undefined {
    const backend = fileBackendRoot(this.settings.backendUrl);
    return backend && join(backend, "stacks", projectName, name);
  }

  /** Whether the stack exists; cheap (no Pulumi process) for the file backend. */
  async exists(name: string): Promise<boolean> {
    const base = this.checkpointBase(name);
    if (base) {
      for (const suffix of [".json", ".json.gz", ".json.attrs"]) if (await this.io.exists(`${base}${suffix}`)) return true;
      return false;
    }
    const ws = await LocalWorkspace.create(await this.workspace("destroy"));
    // Any `stack ls` of this process past one's deadline is on the same unanswering backend.
    const kill = () => void killEngines("ls", "pulumi stack ls did not finish within its deadline", this.log);
    return (await this.command("destroy", undefined, "stack ls", () => ws.listStacks(), kill)).some((stack) => stack.name === name);
  }

  /**
   * Whether the stack's state records resources (a stack a preview made records none). The file
   * backend's checkpoint is read directly; for other backends, whether the stack exists.
   */
  async hasResources(name: string): Promise<boolean> {
    const base = this.checkpointBase(name);
    if (!base) return this.exists(name);
    if (await this.io.exists(`${base}.json.gz`)) return true;
    const checkpoint = await this.checkpointFile(base);
    if (!checkpoint) return false;
    return (checkpoint.latest?.resources ?? []).some((resource) => !resource.type.startsWith("pulumi:"));
  }

  /**
   * Whether an engine killed mid-operation left pending operations in the stack's state, which
   * only the next operation on it clears. Known for the file backend (its checkpoint, read
   * directly) and for stacks this process ran; other backends' stacks are cleared before their
   * next operation, as always.
   */
  async hasPendingOperations(name: string): Promise<boolean> {
    return (await this.pendingOperationsKnown(name)) === true;
  }

  /** Whether the stack has pending operations, where that is known without a Pulumi process; undefined where not. */
  private async pendingOperationsKnown(name: string): Promise<boolean | undefined> {
    if (this.clean.has(name)) return false;
    const base = this.checkpointBase(name);
    const file = base ? await this.checkpointFile(base) : undefined;
    if (!file) return undefined;
    if (file.latest?.pending_operations?.length) return true;
    this.clean.add(name);
    return false;
  }

  /** The file backend's checkpoint, read directly (one read, no check first); undefined when it is absent (or compressed). */
  private async checkpointFile(base: string): Promise<{ latest?: { resources?: StateResource[]; pending_operations?: unknown[] } } | undefined> {
    const text = await this.io.readTextIfAny(`${base}.json`);
    if (text === undefined) return undefined;
    return (JSON.parse(text) as { checkpoint?: { latest?: { resources?: StateResource[]; pending_operations?: unknown[] } } }).checkpoint;
  }

  /** Removes a stack's state without touching the cluster (the namespace is being deleted). */
  async forget(name: string): Promise<void> {
    const ws = await LocalWorkspace.create(await this.workspace("destroy"));
    await this.command("destroy", name, "stack rm", () => ws.removeStack(name, { force: true })).catch((error: unknown) => {
      if (!(error instanceof StackNotFoundError)) throw error;
    });
    this.forgetSelection(name);
  }

  /** The engine's own output, kept at debug level under the stack's name. */
  private engineOutput(name: string): (out: string) => void {
    return (out) => this.log.debug(out.trimEnd(), { stack: name });
  }

  private forgetSelection(name: string): void {
    this.stacks.delete(name);
    this.clean.delete(name);
  }

  private interrupted(what: string): OperationInterrupted {
    return new OperationInterrupted(`pulumi ${what} was stopped: this replica is handing over to the next leader`);
  }

  private deadlineMs(): number {
    return this.settings.operationTimeoutMs ?? defaultOperationTimeoutMs;
  }

  /**
   * Runs an operation whose state-folder calls may not answer (a hung volume, a file that never
   * answers; see state-io.ts): it then fails as OperationTimedOut, with the path that hung and
   * since when, as an engine past its deadline does.
   */
  private async answered<T>(kind: StackOperation["kind"], operation: () => Promise<T>): Promise<T> {
    const started = new Date();
    try {
      return await operation();
    } catch (error) {
      if (!(error instanceof StateFolderUnanswered)) throw error;
      throw new OperationTimedOut(report(kind, started, undefined, error), this.deadlineMs());
    }
  }

  /**
   * A Pulumi command that is no engine operation (stack init, select, export, import, rm, ls; the
   * CLI's version check) within an operation's deadline: a backend that never answers (a hung file
   * system or object store) must not hold a worker for ever. The Automation API takes no abort
   * signal for these, so past the deadline the command is killed (`kill`) rather than asked to
   * stop, and the lock it may leave is broken; the operation it was part of (`kind`) fails with
   * OperationTimedOut. A command of no stack (the version check, `stack ls`) brings a `kill` of
   * its own, which finds its process by its arguments.
   */
  private async command<T>(kind: StackOperation["kind"], stack: string | undefined, what: string, call: () => Promise<T>, kill: () => Promise<void> | void = () => (stack ? this.stopEngines(stack, `pulumi ${what} did not finish within its deadline`) : undefined)): Promise<T> {
    const started = new Date();
    const deadlineMs = this.deadlineMs();
    const result = await withinDeadline(call(), deadlineMs).catch((error: unknown) => {
      throw this.handingOver ? this.interrupted(what) : error;
    });
    if (result !== timedOut) return result;
    this.log.warn(`pulumi ${what} passed its deadline; killing it`, { stack, deadlineMs });
    await kill();
    throw new OperationTimedOut(report(kind, started, undefined, `pulumi ${what} did not finish within its deadline of ${deadlineMs / 1000} s; it was killed`), deadlineMs);
  }

  /**
   * Runs one engine operation within its deadline. Past it the engine is asked to cancel (SIGINT,
   * as the Automation API's abort signal does); an engine still running after a grace period as
   * long again (30 s at most) is killed with its plugins, and its lock broken: a hung operation
   * must never hold a worker or its stack for ever.
   */
  private async run(name: string, kind: StackOperation["kind"], operation: (signal: AbortSignal) => Promise<Outcome>): Promise<StackOperation> {
    const started = new Date();
    let result: StackOperation["result"] = "failed";
    const deadlineMs = this.deadlineMs();
    const abort = new AbortController();
    let killer: NodeJS.Timeout | undefined;
    const deadline = setTimeout(() => {
      this.log.warn(`pulumi ${kind} passed its deadline; cancelling it`, { stack: name, deadlineMs });
      abort.abort();
      killer = setTimeout(() => void this.stopEngines(name, cancelledWhy), Math.min(maxKillGraceMs, deadlineMs));
    }, deadlineMs);
    this.observer?.started();
    try {
      const summary = await operation(abort.signal);
      const outcome = report(kind, started, summary);
      if (outcome.result === "failed") throw new StackOperationFailed(outcome);
      result = "succeeded";
      return outcome;
    } catch (error) {
      if (this.handingOver) throw this.interrupted(kind);
      if (abort.signal.aborted) {
        await this.stopEngines(name, cancelledWhy);
        throw new OperationTimedOut(report(kind, started, undefined, `pulumi ${kind} did not finish within its deadline of ${deadlineMs / 1000} s; it was cancelled and its stack unlocked`), deadlineMs);
      }
      if (error instanceof StackOperationFailed || error instanceof ConcurrentUpdateError || error instanceof StackNotFoundError) throw error;
      throw new StackOperationFailed(report(kind, started, undefined, error));
    } finally {
      clearTimeout(deadline);
      clearTimeout(killer);
      this.observer?.finished(kind, result, (Date.now() - started.getTime()) / 1000);
    }
  }
}
