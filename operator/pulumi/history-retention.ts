// A bounded state folder. Pulumi's file backend keeps, for every update of a stack, a history
// entry and a full copy of the checkpoint (.pulumi/history/<project>/<stack>/<stack>-<ns>.history.json
// and .checkpoint.json, each with its .attrs), and a third copy under .pulumi/backups/; nothing
// prunes either, and `stack rm` leaves the backups and a <stack>.json.bak behind (it removes only
// the history). Pulumi's own setting covers the backups: PULUMI_DISABLE_CHECKPOINT_BACKUPS (set
// in engine.ts; PULUMI_RETAIN_CHECKPOINTS, a fourth copy, stays off). For the rest there is no
// setting, so the operator prunes after each operation: the last `limit` updates of each stack
// stay (what `appstack history` shows), and a removed stack's leftovers go with it. A destroyed
// stack's history entries are kept aside before its removal (deleted-history.ts). None of this
// fails an operation: a failure is logged, and pruning is tried again after the next operation.
// The postgres backend keeps the same blobs under the same keys, as rows (state-store.ts).
import type { Logger } from "../base/log.ts";
import { DeletedHistory } from "./deleted-history.ts";
import { projectName } from "./stack-names.ts";
import type { StateIo } from "./state-io.ts";
import { stateStore, type StateStore } from "./state-store.ts";

/** Updates kept per stack unless configured (APPSTACK_HISTORY_LIMIT). */
export const defaultHistoryLimit = 20;

/** `<stack>-<unix nanoseconds>` of one update: every file of that update starts with it and a dot. */
const updatePrefix = /^(.*-(\d+))\.(history|checkpoint)\./;

/** The updates of a history folder's file names, oldest first, each with its files. */
export function updatesIn(files: readonly string[]): { prefix: string; files: string[] }[] {
  const byPrefix = new Map<string, { time: bigint; files: string[] }>();
  for (const file of files) {
    const match = updatePrefix.exec(file);
    if (!match) continue;
    const entry = byPrefix.get(match[1]!) ?? { time: BigInt(match[2]!), files: [] };
    entry.files.push(file);
    byPrefix.set(match[1]!, entry);
  }
  return [...byPrefix.entries()].sort(([, a], [, b]) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0)).map(([prefix, entry]) => ({ prefix, files: entry.files.sort() }));
}

export class HistoryRetention {
  private readonly store: StateStore | undefined;
  private readonly log: Logger;
  private readonly deleted: DeletedHistory;
  readonly limit: number;

  constructor(backendUrl: string, io: StateIo, log: Logger, limit = defaultHistoryLimit) {
    this.store = stateStore(backendUrl, io);
    this.log = log;
    this.deleted = new DeletedHistory(this.store);
    this.limit = limit;
  }

  /** After each operation on a stack: its history within the bound. */
  afterOperation(stack: string): Promise<void> {
    return this.logged(stack, "pruning the stack's history", () => this.prune(stack));
  }

  /** Before `stack rm`, which removes the history: kept aside for `appstack history`. */
  beforeRemoval(stack: string): Promise<void> {
    return this.logged(stack, "keeping the destroyed stack's history", () => this.deleted.archive(stack));
  }

  /** After `stack rm`: nothing of the stack left. */
  afterRemoval(stack: string): Promise<void> {
    return this.logged(stack, "removing what stack rm left", () => this.removeLeftovers(stack));
  }

  private async logged(stack: string, what: string, work: () => Promise<unknown>): Promise<void> {
    try {
      await work();
    } catch (error) {
      this.log.warn(`${what} failed`, { stack, error: error instanceof Error ? error.message : String(error) });
    }
  }

  /** Removes all but the last `limit` updates of the stack's history, and its backups. Returns the updates removed. */
  async prune(stack: string): Promise<number> {
    const store = this.store;
    if (!store) return 0;
    const folder = `.pulumi/history/${projectName}/${stack}/`;
    const files = (await store.list(folder)).map((key) => key.slice(folder.length));
    const updates = updatesIn(files);
    const old = updates.slice(0, Math.max(0, updates.length - this.limit));
    for (const update of old) for (const file of update.files) await store.remove(folder + file);
    // Written by engines before backups were turned off.
    await store.removeAll(`.pulumi/backups/${projectName}/${stack}/`);
    return old.length;
  }

  /** After `stack rm`: what Pulumi leaves of a removed stack (its last checkpoint as .bak, its backups). */
  async removeLeftovers(stack: string): Promise<void> {
    const store = this.store;
    if (!store) return;
    const stacks = `.pulumi/stacks/${projectName}/`;
    for (const suffix of [".json.bak", ".json.gz.bak", ".json.zst.bak"]) {
      await store.remove(`${stacks}${stack}${suffix}`);
      if (store.attributeFiles) await store.remove(`${stacks}${stack}${suffix}.attrs`);
    }
    await store.removeAll(`.pulumi/backups/${projectName}/${stack}/`);
    await store.removeAll(`.pulumi/history/${projectName}/${stack}/`);
  }
}
