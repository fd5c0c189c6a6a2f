// Which stacks are known to carry no pending operations (what an engine killed mid-operation
// leaves in a stack's state), so that an operation spends no `stack export` to find out.
import type { Checkpoints } from "./checkpoints.ts";

export class PendingOperations {
  /**
   * Stacks known to carry no pending operations. Only an operation interrupted outside this
   * process (a crash before it started, another replica's engine while the stack's object was in
   * its share) or a failed one here can leave some.
   */
  private readonly clean = new Set<string>();
  private readonly checkpoints: Checkpoints;

  constructor(checkpoints: Checkpoints) {
    this.checkpoints = checkpoints;
  }

  /** Whether the stack has pending operations, where that is known without a Pulumi process; undefined where not. */
  async known(name: string): Promise<boolean | undefined> {
    if (this.clean.has(name)) return false;
    const file = await this.checkpoints.file(name);
    if (!file) return undefined;
    if (file.latest?.pending_operations?.length) return true;
    this.clean.add(name);
    return false;
  }

  /** The stack carries none: it is new, or an operation on it just succeeded. */
  markClean(name: string): void {
    this.clean.add(name);
  }

  /** The stack may carry some again (an operation on it failed or was stopped, or another replica runs it now), or is gone. */
  forget(name: string): void {
    this.clean.delete(name);
  }
}
