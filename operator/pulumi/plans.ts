// Update plans saved by previews, one folder per stack beside the stack state, named by the digest
// of their content. An approval names that digest, so it can only ever apply the plan it was
// given for. Only the newest plan of a stack is kept.
import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import type { StateIo } from "./state-io.ts";

const planIdPattern = /^[0-9a-f]{12}$/;

export class PlanStore {
  private readonly dir: string;
  private readonly io: StateIo;

  constructor(dir: string, io: StateIo) {
    this.dir = dir;
    this.io = io;
  }

  /** Where the engine should write the next plan of `stack`. */
  async draft(stack: string): Promise<string> {
    await this.io.makeFolder(join(this.dir, stack));
    return join(this.dir, stack, `draft-${randomBytes(6).toString("hex")}.json`);
  }

  /** Names a written draft by its digest, drops every older plan of the stack, returns the id. */
  async commit(stack: string, draft: string): Promise<string> {
    const id = createHash("sha256").update(await this.io.readBytes(draft)).digest("hex").slice(0, 12);
    await this.io.rename(draft, join(this.dir, stack, `${id}.json`));
    for (const file of await this.io.list(join(this.dir, stack))) {
      if (file !== `${id}.json`) await this.io.remove(join(this.dir, stack, file));
    }
    return id;
  }

  /** The plan file with this id, when it is still stored. Any other text (user input), or none, is refused. */
  async find(stack: string, id: string | undefined): Promise<string | undefined> {
    if (id === undefined || !planIdPattern.test(id)) return undefined;
    const file = join(this.dir, stack, `${id}.json`);
    return (await this.io.exists(file)) ? file : undefined;
  }

  async discard(stack: string, draft?: string): Promise<void> {
    await this.io.remove(draft ?? join(this.dir, stack), true);
  }
}
