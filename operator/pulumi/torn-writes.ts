// Torn attribute files in the file backend. Pulumi's file backend (gocloud.dev's fileblob) writes
// each blob atomically (a temporary file, then a rename), but the blob's attributes file beside it
// (`<blob>.attrs`: content type and MD5) non-atomically: create, then write. An engine killed
// between the two leaves an empty `.attrs`, and every later read of the blob fails with "failed
// to load checkpoint: EOF" (seen in the kill test: a deleted App never finalized). fileblob reads
// a missing attributes file as "no attributes", so an unreadable one is removed; the blob itself
// is untouched. The postgres backend writes a blob as one row (one statement): nothing to tear.
import type { Logger } from "../base/log.ts";
import { StateFolderUnanswered, type StateIo } from "./state-io.ts";
import { stateStore, type StateStore } from "./state-store.ts";

/** Whether the file is there and unreadable; a state folder that does not answer is no answer. */
async function torn(key: string, store: StateStore): Promise<boolean> {
  let text: string | undefined;
  try {
    text = await store.read(key);
  } catch (error) {
    if (error instanceof StateFolderUnanswered) throw error;
    return true;
  }
  if (text === undefined) return false;
  try {
    JSON.parse(text);
    return false;
  } catch {
    return true;
  }
}

/**
 * Removes the unreadable attribute files of `stack`'s checkpoint (and its backup), or of every
 * stack of `project`, and of the backend's metadata; returns how many it removed.
 */
export async function repairTornAttributes(backendUrl: string, project: string, log: Logger, io: StateIo, stack?: string): Promise<number> {
  const store = stateStore(backendUrl, io);
  if (!store?.attributeFiles) return 0;
  const stacks = `.pulumi/stacks/${project}/`;
  const candidates = [".pulumi/meta.yaml.attrs"];
  for (const key of await store.list(stacks)) {
    const file = key.slice(stacks.length);
    if (!file.includes("/") && file.endsWith(".attrs") && (stack === undefined || file.startsWith(`${stack}.json`))) candidates.push(key);
  }
  let removed = 0;
  for (const key of candidates) {
    if (!(await torn(key, store))) continue;
    log.warn("removing a torn attributes file left by a killed engine", { file: `${store.description}/${key}` });
    await store.remove(key);
    removed++;
  }
  return removed;
}
