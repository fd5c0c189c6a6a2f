// The backend's own storage, read and written directly by the operator where a Pulumi process
// would cost too much or cannot help: stale locks (stack-locks.ts), checkpoints (checkpoints.ts),
// history (history-retention.ts, deleted-history.ts). Pulumi's DIY backends store blobs under keys
// that are the same for each (`.pulumi/stacks/<project>/<stack>.json`, `.pulumi/locks/...`,
// `.pulumi/history/...`): files below the URL's folder for `file://`, rows of one table for
// `postgres://` (postgres-store.ts). Keys here are relative to that root and use `/`.
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { postgresStore } from "./postgres-store.ts";
import type { StateIo } from "./state-io.ts";

export interface StateStore {
  /** What the backend is, for messages: the folder, or the database with its password redacted. */
  readonly description: string;
  /**
   * Whether each blob has an attributes file beside it (`<key>.attrs`): gocloud's fileblob writes
   * one, non-atomically (torn-writes.ts); a table row has none.
   */
  readonly attributeFiles: boolean;
  /** Every key below `prefix` (a folder: it ends in `/`), at any depth; none when there is nothing. */
  list(prefix: string): Promise<string[]>;
  /** The blob's text; undefined when there is none. */
  read(key: string): Promise<string | undefined>;
  write(key: string, text: string): Promise<void>;
  /**
   * Writes only where no blob is, in one atomic step; whether it wrote. Only a store that has such
   * a step (a row's insert) offers it: a file backend's new checkpoint is a file renamed into place.
   */
  create?(key: string, text: string): Promise<boolean>;
  /** Nothing there is no error. */
  remove(key: string): Promise<void>;
  /** Every key below `prefix` (a folder: it ends in `/`). */
  removeAll(prefix: string): Promise<void>;
}

/** The store of a backend URL: file:// and postgres://; undefined for any other backend (cloud buckets: read through Pulumi). */
export function stateStore(backendUrl: string, io: StateIo): StateStore | undefined {
  if (backendUrl.startsWith("file://")) return new FileStore(fileURLToPath(backendUrl), io);
  if (backendUrl.startsWith("postgres://") || backendUrl.startsWith("postgresql://")) return postgresStore(backendUrl, io.deadlineMs);
  return undefined;
}

const isMissing = (error: unknown) => ["ENOENT", "ENOTDIR"].includes((error as { code?: string }).code ?? "");

/** The file backend: keys are paths below the URL's folder, every call through StateIo (deadlines, stuck calls). */
export class FileStore implements StateStore {
  readonly attributeFiles = true;
  readonly description: string;
  private readonly root: string;
  private readonly io: StateIo;

  constructor(root: string, io: StateIo) {
    this.root = root;
    this.io = io;
    this.description = root;
  }

  /** The file of `key`. */
  path(key: string): string {
    return join(this.root, ...key.split("/"));
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await this.io.listEntries(dir);
      } catch (error) {
        if (isMissing(error)) return;
        throw error;
      }
      for (const entry of entries) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) await walk(path);
        else keys.push(relative(this.root, path).split(sep).join("/"));
      }
    };
    await walk(this.path(prefix));
    return keys.sort();
  }

  read(key: string): Promise<string | undefined> {
    return this.io.readTextIfAny(this.path(key));
  }

  async write(key: string, text: string): Promise<void> {
    const path = this.path(key);
    await this.io.makeFolder(join(path, ".."));
    await this.io.write(path, text);
  }

  remove(key: string): Promise<void> {
    return this.io.remove(this.path(key));
  }

  removeAll(prefix: string): Promise<void> {
    return this.io.remove(this.path(prefix), true);
  }
}
