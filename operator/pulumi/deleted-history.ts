// The history of a deleted object. Deleting an object destroys its stack and removes it, and
// `pulumi stack rm` removes the stack's history with it. So that `appstack history` can still say
// what was done to it, the destroy included, the file backend's history entries (not their
// checkpoint copies: about 1 KB each) are copied aside between the destroy and the removal, into
// <backend folder>/deleted-history/<unix ms>-<stack>/. The last `keep` deleted stacks are kept.
import { dirname, join } from "node:path";
import { fileBackendRoot } from "./engine.ts";
import { projectName } from "./stack-names.ts";
import type { StateIo } from "./state-io.ts";

/** Deleted stacks whose history is kept. */
export const deletedStacksKept = 100;

/** One update as the file backend stores it (backend.UpdateInfo): times in Unix seconds. */
export interface StoredUpdate {
  readonly kind: string;
  readonly startTime: number;
  readonly endTime?: number;
  readonly message?: string;
  readonly result: string;
  readonly resourceChanges?: Record<string, number>;
}

const folderName = /^(\d+)-(.+)$/;

export class DeletedHistory {
  private readonly historyRoot: string | undefined;
  private readonly archiveRoot: string | undefined;
  private readonly io: StateIo;
  private readonly keep: number;

  constructor(backendUrl: string, io: StateIo, keep = deletedStacksKept) {
    const root = fileBackendRoot(backendUrl);
    this.historyRoot = root && join(root, "history", projectName);
    this.archiveRoot = root && join(dirname(root), "deleted-history");
    this.io = io;
    this.keep = keep;
  }

  /** Copies the stack's history entries aside (before `stack rm` removes them), and drops the oldest deleted stacks past `keep`. */
  async archive(stack: string, now = Date.now()): Promise<void> {
    if (!this.historyRoot || !this.archiveRoot) return;
    const source = join(this.historyRoot, stack);
    const entries = (await this.listOrNone(source)).filter((file) => file.endsWith(".history.json"));
    if (!entries.length) return;
    const target = join(this.archiveRoot, `${now}-${stack}`);
    await this.io.makeFolder(target);
    for (const file of entries) await this.io.write(join(target, file), await this.io.readText(join(source, file)));
    const folders = (await this.listOrNone(this.archiveRoot)).filter((name) => folderName.test(name)).sort(byTime);
    for (const old of folders.slice(0, Math.max(0, folders.length - this.keep))) await this.io.remove(join(this.archiveRoot, old), true);
  }

  /** The latest deleted stack of this name: when it was removed, and its updates oldest first. */
  async latest(stack: string): Promise<{ deletedAt: Date; updates: StoredUpdate[] } | undefined> {
    if (!this.archiveRoot) return undefined;
    const mine = (await this.listOrNone(this.archiveRoot)).filter((name) => folderName.exec(name)?.[2] === stack).sort(byTime);
    const folder = mine.at(-1);
    if (!folder) return undefined;
    // Named <stack>-<unix ns>.history.json: in the order of their names' numbers.
    const files = (await this.io.list(join(this.archiveRoot, folder))).flatMap((file) => {
      const time = /-(\d+)\.history\.json$/.exec(file)?.[1];
      return time ? [{ file, time: BigInt(time) }] : [];
    });
    files.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
    const updates: StoredUpdate[] = [];
    for (const { file } of files) updates.push(JSON.parse(await this.io.readText(join(this.archiveRoot, folder, file))) as StoredUpdate);
    return { deletedAt: new Date(Number(folderName.exec(folder)![1])), updates };
  }

  private async listOrNone(folder: string): Promise<string[]> {
    return this.io.list(folder).catch((error: unknown) => {
      if ((error as { code?: string }).code === "ENOENT") return [];
      throw error;
    });
  }
}

function byTime(a: string, b: string): number {
  return Number(folderName.exec(a)![1]) - Number(folderName.exec(b)![1]);
}
