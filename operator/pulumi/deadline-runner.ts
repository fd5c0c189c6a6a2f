// Every Pulumi call of an operation within the operation's deadline: the engine operations
// themselves (cancelled, then killed) and the CLI commands around them (killed), each reported
// as the StackOperation a status carries.
import { ConcurrentUpdateError, StackNotFoundError, type UpdateSummary } from "@pulumi/pulumi/automation/index.js";
import type { StackOperation, StepCounts } from "../../crds/types.ts";
import { timedOut, withinDeadline } from "../base/deadline.ts";
import type { Logger } from "../base/log.ts";
import { engineMessage, OperationInterrupted, OperationTimedOut, StackOperationFailed } from "./stack-errors.ts";
import { StateFolderUnanswered } from "./state-io.ts";
import { operationRecord } from "./update-messages.ts";

/** How long one engine operation may take unless configured (APPSTACK_OPERATION_TIMEOUT_SECONDS). */
export const defaultOperationTimeoutMs = 300_000;
const maxKillGraceMs = 30_000;
const cancelledWhy = "it did not stop when its deadline cancelled it";

/** What an operation reports: an update's summary, or a preview's counts. */
export type Outcome = Pick<UpdateSummary, "resourceChanges"> & { readonly result?: UpdateSummary["result"] };

function report(kind: StackOperation["kind"], started: Date, message: string | undefined, summary?: Outcome, error?: unknown): StackOperation {
  return {
    ...operationRecord(message),
    kind,
    result: error === undefined && summary?.result !== "failed" ? "succeeded" : "failed",
    startTime: started.toISOString(),
    endTime: new Date().toISOString(),
    ...(summary?.resourceChanges ? { resourceChanges: { ...summary.resourceChanges } } : {}),
    ...(error !== undefined ? { message: engineMessage(error) } : {}),
  };
}

/** Sees every engine operation start and finish (metrics): on which stack, and what it changed (the engine's summary, when it gave one). */
export interface OperationObserver {
  started(): void;
  finished(kind: StackOperation["kind"], result: StackOperation["result"], seconds: number, operation: { readonly stack: string; readonly resourceChanges?: StepCounts }): void;
}

/** Kills this process's engines on a stack, then what they leave (Recovery.stopEngines). */
export type EngineStopper = (stack: string, why: string) => Promise<void>;

export class DeadlineRunner {
  /** Set by handOver (the driver's killAll): every failure from then on is the kill's doing. */
  private handingOver = false;

  readonly deadlineMs: number;
  private readonly log: Logger;
  private readonly stopEngines: EngineStopper;
  private readonly observer?: OperationObserver;
  private readonly mayStart: () => boolean;

  /** `mayStart`: asked right before any Pulumi process starts (a sharded replica's lease, docs/sharding.md). */
  constructor(deadlineMs: number, log: Logger, stopEngines: EngineStopper, observer?: OperationObserver, mayStart: () => boolean = () => true) {
    this.deadlineMs = deadlineMs;
    this.log = log;
    this.stopEngines = stopEngines;
    this.observer = observer;
    this.mayStart = mayStart;
  }

  /** Throws, starting nothing, unless this replica may still run Pulumi (it holds its shard lease now, by its own clock). */
  private fence(what: string): void {
    if (!this.mayStart()) throw new OperationInterrupted(`pulumi ${what} was not started: this replica no longer holds its shard lease`);
  }

  /** This replica is handing over: its engines are being killed, and what fails from now on was stopped, not failed. */
  handOver(): void {
    this.handingOver = true;
  }

  private interrupted(what: string): OperationInterrupted {
    return new OperationInterrupted(`pulumi ${what} was stopped: this replica is handing over to the next leader`);
  }

  /**
   * Runs an operation whose state-folder calls may not answer (a hung volume, a file that never
   * answers; see state-io.ts): it then fails as OperationTimedOut, with the path that hung and
   * since when, as an engine past its deadline does.
   */
  async answered<T>(kind: StackOperation["kind"], operation: () => Promise<T>): Promise<T> {
    const started = new Date();
    try {
      return await operation();
    } catch (error) {
      if (!(error instanceof StateFolderUnanswered)) throw error;
      throw new OperationTimedOut(report(kind, started, undefined, undefined, error), this.deadlineMs);
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
  async command<T>(kind: StackOperation["kind"], stack: string | undefined, what: string, call: () => Promise<T>, kill: () => Promise<void> | void = () => (stack ? this.stopEngines(stack, `pulumi ${what} did not finish within its deadline`) : undefined)): Promise<T> {
    this.fence(what);
    const started = new Date();
    const deadlineMs = this.deadlineMs;
    const result = await withinDeadline(call(), deadlineMs).catch((error: unknown) => {
      throw this.handingOver ? this.interrupted(what) : error;
    });
    if (result !== timedOut) return result;
    this.log.warn(`pulumi ${what} passed its deadline; killing it`, { stack, deadlineMs });
    await kill();
    throw new OperationTimedOut(report(kind, started, undefined, undefined, `pulumi ${what} did not finish within its deadline of ${deadlineMs / 1000} s; it was killed`), deadlineMs);
  }

  /**
   * Runs one engine operation within its deadline. Past it the engine is asked to cancel (SIGINT,
   * as the Automation API's abort signal does); an engine still running after a grace period as
   * long again (30 s at most) is killed with its plugins, and its lock broken: a hung operation
   * must never hold a worker or its stack for ever.
   */
  /** `message`: the update's message (update-messages.ts), whose record the operation's report carries. */
  async run(name: string, kind: StackOperation["kind"], operation: (signal: AbortSignal) => Promise<Outcome>, message?: string): Promise<StackOperation> {
    this.fence(kind);
    const started = new Date();
    let result: StackOperation["result"] = "failed";
    let resourceChanges: StepCounts | undefined;
    const deadlineMs = this.deadlineMs;
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
      resourceChanges = summary?.resourceChanges;
      const outcome = report(kind, started, message, summary);
      if (outcome.result === "failed") throw new StackOperationFailed(outcome);
      result = "succeeded";
      return outcome;
    } catch (error) {
      if (this.handingOver) throw this.interrupted(kind);
      if (abort.signal.aborted) {
        await this.stopEngines(name, cancelledWhy);
        throw new OperationTimedOut(report(kind, started, message, undefined, `pulumi ${kind} did not finish within its deadline of ${deadlineMs / 1000} s; it was cancelled and its stack unlocked`), deadlineMs);
      }
      if (error instanceof StackOperationFailed || error instanceof ConcurrentUpdateError || error instanceof StackNotFoundError) throw error;
      throw new StackOperationFailed(report(kind, started, message, undefined, error));
    } finally {
      clearTimeout(deadline);
      clearTimeout(killer);
      this.observer?.finished(kind, result, (Date.now() - started.getTime()) / 1000, { stack: name, ...(resourceChanges ? { resourceChanges } : {}) });
    }
  }
}
