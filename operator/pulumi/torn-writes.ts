// Torn attribute files in the file backend. Pulumi's file backend (gocloud.dev's fileblob) writes
// each blob atomically (a temporary file, then a rename), but the blob's attributes file beside it
// (`<blob>.attrs`: content type and MD5) non-atomically: create, then write. An engine killed
// between the two leaves an empty `.attrs`, and every later read of the blob fails with "failed
// to load checkpoint: EOF" (seen in the kill test: a deleted App never finalized). fileblob reads
// a missing attributes file as "no attributes", so an unreadable one is removed; the blob itself
// is untouched.
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileBackendRoot } from "./engine.ts";
import type { Logger } from "../manager/log.ts";

function readable(path: string): boolean {
  try {
    JSON.parse(readFileSync(path, "utf8"));
    return true;
  } catch {
    return false;
  }
}

/**
 * Removes the unreadable attribute files of `stack`'s checkpoint (and its backup), or of every
 * stack of `project`, and of the backend's metadata; returns how many it removed.
 */
export function repairTornAttributes(backendUrl: string, project: string, log: Logger, stack?: string): number {
  const root = fileBackendRoot(backendUrl);
  if (!root) return 0;
  const stacks = join(root, "stacks", project);
  const candidates = [join(root, "meta.yaml.attrs")];
  if (existsSync(stacks)) {
    for (const file of readdirSync(stacks)) {
      if (file.endsWith(".attrs") && (stack === undefined || file.startsWith(`${stack}.json`))) candidates.push(join(stacks, file));
    }
  }
  let removed = 0;
  for (const path of candidates.filter((p) => existsSync(p) && !readable(p))) {
    log.warn("removing a torn attributes file left by a killed engine", { file: path });
    rmSync(path, { force: true });
    removed++;
  }
  return removed;
}
