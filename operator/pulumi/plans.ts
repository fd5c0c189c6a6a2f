// Update plans saved by previews, named by the digest of their content. An approval names that
// digest, so it can only ever apply the plan it was given for. Only the newest plan of a stack is
// kept. The engine writes and reads a plan as a file, in one folder per stack beside the replica's
// state; the plan itself lives in the stack backend (`.appstack/plans/<stack>/<id>.json`), which
// every replica reads: an object that moves to another replica while its plan waits for approval
// is approved and applied there (docs/sharding.md). The local folder is only the engine's copy.
import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import type { StateIo } from "./state-io.ts";
import type { StateStore } from "./state-store.ts";

const planIdPattern = /^[0-9a-f]{12}$/;

/** Where a stack's plans are in the backend: beside Pulumi's `.pulumi/`, never inside it. */
const sharedFolder = (stack: string) => `.appstack/plans/${stack}/`;

export class PlanStore {
  private readonly dir: string;
  private readonly io: StateIo;
  /** The backend every replica reads; undefined for a backend the operator cannot read directly (cloud buckets): plans stay local. */
  private readonly shared: StateStore | undefined;

  constructor(dir: string, io: StateIo, shared?: StateStore) {
    this.dir = dir;
    this.io = io;
    this.shared = shared;
  }

  /** Where the engine should write the next plan of `stack`. */
  async draft(stack: string): Promise<string> {
    await this.io.makeFolder(join(this.dir, stack));
    return join(this.dir, stack, `draft-${randomBytes(6).toString("hex")}.json`);
  }

  /** Names a written draft by its digest, stores it where every replica reads it, drops every older plan of the stack, returns the id. */
  async commit(stack: string, draft: string): Promise<string> {
    const content = await this.io.readBytes(draft);
    const id = createHash("sha256").update(content).digest("hex").slice(0, 12);
    if (this.shared) {
      await this.shared.write(`${sharedFolder(stack)}${id}.json`, content.toString("utf8"));
      for (const key of await this.shared.list(sharedFolder(stack))) if (key !== `${sharedFolder(stack)}${id}.json`) await this.shared.remove(key);
    }
    await this.io.rename(draft, join(this.dir, stack, `${id}.json`));
    for (const file of await this.io.list(join(this.dir, stack))) {
      if (file !== `${id}.json`) await this.io.remove(join(this.dir, stack, file));
    }
    return id;
  }

  /**
   * The plan file with this id, when it is still stored: the local copy, or the backend's, made
   * local for the engine (another replica previewed it). Any other text (user input), or none, is refused.
   */
  async find(stack: string, id: string | undefined): Promise<string | undefined> {
    if (id === undefined || !planIdPattern.test(id)) return undefined;
    const file = join(this.dir, stack, `${id}.json`);
    if (!this.shared) return (await this.io.exists(file)) ? file : undefined;
    // The backend decides: a plan another replica has replaced since is no longer the stack's.
    const content = await this.shared.read(`${sharedFolder(stack)}${id}.json`);
    if (content === undefined) return undefined;
    if (!(await this.io.exists(file))) {
      await this.io.makeFolder(join(this.dir, stack));
      await this.io.write(file, content);
    }
    return file;
  }

  async discard(stack: string, draft?: string): Promise<void> {
    if (!draft) await this.shared?.removeAll(sharedFolder(stack));
    await this.io.remove(draft ?? join(this.dir, stack), true);
  }
}
