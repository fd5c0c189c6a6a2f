// Update plans saved by previews, one folder per stack beside the stack state, named by the digest
// of their content. An approval names that digest, so it can only ever apply the plan it was
// given for. Only the newest plan of a stack is kept.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";

const planIdPattern = /^[0-9a-f]{12}$/;

export class PlanStore {
  private readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  /** Where the engine should write the next plan of `stack`. */
  draft(stack: string): string {
    mkdirSync(join(this.dir, stack), { recursive: true });
    return join(this.dir, stack, `draft-${randomBytes(6).toString("hex")}.json`);
  }

  /** Names a written draft by its digest, drops every older plan of the stack, returns the id. */
  commit(stack: string, draft: string): string {
    const id = createHash("sha256").update(readFileSync(draft)).digest("hex").slice(0, 12);
    renameSync(draft, join(this.dir, stack, `${id}.json`));
    for (const file of readdirSync(join(this.dir, stack))) {
      if (file !== `${id}.json`) rmSync(join(this.dir, stack, file), { force: true });
    }
    return id;
  }

  /** The plan file with this id, when it is still stored. Any other text (user input) is refused. */
  find(stack: string, id: string): string | undefined {
    if (!planIdPattern.test(id)) return undefined;
    const file = join(this.dir, stack, `${id}.json`);
    return existsSync(file) ? file : undefined;
  }

  discard(stack: string, draft?: string): void {
    rmSync(draft ?? join(this.dir, stack), { recursive: true, force: true });
  }
}
