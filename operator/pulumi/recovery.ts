// Repairs what a failed or killed operation leaves behind (stale locks, torn attribute files,
// orphaned plugins) so that no human has to.
import { ConcurrentUpdateError } from "@pulumi/pulumi/automation/index.js";
import type { Logger } from "../base/log.ts";
import type { EngineSettings } from "./engine.ts";
import { killEngines, killOrphanedPlugins } from "./orphans.ts";
import type { PendingOperations } from "./pending-operations.ts";
import { StackBusy } from "./stack-errors.ts";
import type { HolderCheck } from "../base/lock-holders.ts";
import { breakAllStaleLocks, breakStaleLocks } from "./stack-locks.ts";
import { projectName } from "./stack-names.ts";
import type { StateIo } from "./state-io.ts";
import { repairTornAttributes } from "./torn-writes.ts";

export type RecoverySettings = Pick<EngineSettings, "backendUrl" | "pulumiHome"> & {
  /** Proves another host's engines gone (another replica's pod); without it, other hosts' locks stay. */
  readonly otherHost?: HolderCheck;
};

export class Recovery {
  private readonly settings: RecoverySettings;
  private readonly log: Logger;
  private readonly io: StateIo;
  private readonly pending: PendingOperations;

  constructor(settings: RecoverySettings, log: Logger, io: StateIo, pending: PendingOperations) {
    this.settings = settings;
    this.log = log;
    this.io = io;
    this.pending = pending;
  }

  /** Runs `operation`, breaking a stale lock once if a dead operator left one behind. */
  async unlocked<T>(name: string, operation: () => Promise<T>): Promise<T> {
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

  breakStaleLocks(name: string) {
    return breakStaleLocks(this.settings.backendUrl, projectName, name, this.log, this.io, this.settings.otherHost);
  }

  /**
   * A failed operation or stack creation can leave a lock behind that no engine holds: one whose
   * write the disk cut short (a full state folder leaves an empty lock file, which made every later
   * `stack init` fail with "unexpected end of JSON input" after space returned), or an attributes
   * file a killed engine tore (torn-writes.ts). A lock is broken only when its holder is gone.
   */
  async afterFailure(name: string, error: unknown): Promise<unknown> {
    if (error instanceof ConcurrentUpdateError) return error;
    await repairTornAttributes(this.settings.backendUrl, projectName, this.log, this.io, name);
    await this.breakStaleLocks(name);
    return error;
  }

  /** Kills this process's engines on `stack` (or on every stack), then what they leave: plugins and locks. */
  async stopEngines(stack: string | undefined, why: string): Promise<void> {
    // Resolves once the engines have died, by when init has adopted their plugins.
    await killEngines(stack, why, this.log);
    if (stack) this.pending.forget(stack);
    await this.sweep(stack);
  }

  /** Kills the plugins no engine of ours owns any more; removes torn attribute files and breaks stale locks of `stack` (or of every stack). */
  async sweep(stack?: string): Promise<void> {
    killOrphanedPlugins(this.settings.pulumiHome, this.log);
    await repairTornAttributes(this.settings.backendUrl, projectName, this.log, this.io, stack);
    if (stack) await this.breakStaleLocks(stack);
    else await breakAllStaleLocks(this.settings.backendUrl, projectName, this.log, this.io, this.settings.otherHost);
  }
}
