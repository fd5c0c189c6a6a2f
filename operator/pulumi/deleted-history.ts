// The history of a deleted object. Deleting an object destroys its stack and removes it, and
// `pulumi stack rm` removes the stack's history with it. So that `appstack history` can still say
// what was done to it, the destroy included, the file backend's history entries (not their
// checkpoint copies: about 1 KB each) are copied aside between the destroy and the removal, into
// deleted-history/<unix ms>-<stack>/ beside the backend's .pulumi/ (a folder of the file backend,
// keys of the postgres backend's table: state-store.ts). The last `keep` deleted stacks are kept.
import { projectName } from "./stack-names.ts";
import type { StateStore } from "./state-store.ts";

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

/** Beside .pulumi/, so that Pulumi, which lists only below .pulumi/, never sees it. */
const archiveRoot = "deleted-history/";

export class DeletedHistory {
  private readonly store: StateStore | undefined;
  private readonly keep: number;

  constructor(store: StateStore | undefined, keep = deletedStacksKept) {
    this.store = store;
    this.keep = keep;
  }

  /** Copies the stack's history entries aside (before `stack rm` removes them), and drops the oldest deleted stacks past `keep`. */
  async archive(stack: string, now = Date.now()): Promise<void> {
    const store = this.store;
    if (!store) return;
    const source = `.pulumi/history/${projectName}/${stack}/`;
    const entries = (await this.files(source)).filter((file) => file.endsWith(".history.json"));
    if (!entries.length) return;
    const target = `${archiveRoot}${now}-${stack}/`;
    for (const file of entries) {
      const text = await store.read(source + file);
      if (text !== undefined) await store.write(target + file, text);
    }
    const folders = (await this.folders()).sort(byTime);
    for (const old of folders.slice(0, Math.max(0, folders.length - this.keep))) await store.removeAll(`${archiveRoot}${old}/`);
  }

  /** The latest deleted stack of this name: when it was removed, and its updates oldest first. */
  async latest(stack: string): Promise<{ deletedAt: Date; updates: StoredUpdate[] } | undefined> {
    const store = this.store;
    if (!store) return undefined;
    const mine = (await this.folders()).filter((name) => folderName.exec(name)?.[2] === stack).sort(byTime);
    const folder = mine.at(-1);
    if (!folder) return undefined;
    // Named <stack>-<unix ns>.history.json: in the order of their names' numbers.
    const files = (await this.files(`${archiveRoot}${folder}/`)).flatMap((file) => {
      const time = /-(\d+)\.history\.json$/.exec(file)?.[1];
      return time ? [{ file, time: BigInt(time) }] : [];
    });
    files.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
    const updates: StoredUpdate[] = [];
    for (const { file } of files) {
      const text = await store.read(`${archiveRoot}${folder}/${file}`);
      if (text !== undefined) updates.push(JSON.parse(text) as StoredUpdate);
    }
    return { deletedAt: new Date(Number(folderName.exec(folder)![1])), updates };
  }

  /** The names of the blobs right inside `prefix`. */
  private async files(prefix: string): Promise<string[]> {
    return (await this.store!.list(prefix)).map((key) => key.slice(prefix.length)).filter((name) => !name.includes("/"));
  }

  /** The archive's folders, `<unix ms>-<stack>`. */
  private async folders(): Promise<string[]> {
    const names = (await this.store!.list(archiveRoot)).map((key) => key.slice(archiveRoot.length).split("/")[0]!);
    return [...new Set(names)].filter((name) => folderName.test(name));
  }
}

function byTime(a: string, b: string): number {
  return Number(folderName.exec(a)![1]) - Number(folderName.exec(b)![1]);
}
