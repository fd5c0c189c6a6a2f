// The kinds folder (--kinds DIR, else APPSTACK_KINDS_DIR): loaded by the entry points (cli.ts,
// main.ts) before anything reads the kinds, since a verb's usage text and the operator's watches
// are derived from them (components/kinds.ts closes at its first read). A kind file that fails is
// logged by the operator once its logger exists, and every other kind is served.
import { kindFilesRefusal, loadKindFolder, loadedKindFolders, type KindFolder } from "../../components/kind-files.ts";
import type { Logger } from "../base/log.ts";

/** The verbs that take --kinds: the operator's two, and the rendered install's. */
const takesKinds = new Set(["run", "operator", "manifests"]);

/** The folder `--kinds DIR` or `--kinds=DIR` names in a verb's arguments, else APPSTACK_KINDS_DIR; undefined for none. */
export function kindsFolderOf(verb: string | undefined, args: readonly string[], env: Record<string, string | undefined>): string | undefined {
  // `new kind` reads its own folder's files (new-cli.ts) and registers none: a broken file there must not stop it.
  if (verb === "new") return undefined;
  if (verb !== undefined && takesKinds.has(verb)) {
    for (const [index, arg] of args.entries()) {
      if (arg === "--") break;
      if (arg === "--kinds") return args[index + 1];
      if (arg.startsWith("--kinds=")) return arg.slice("--kinds=".length);
    }
  }
  return env["APPSTACK_KINDS_DIR"] || undefined;
}

/**
 * Loads the folder of `verb`'s arguments or the environment, if any. Only the operator goes on
 * past a file that failed (it logs it: logKindFolders); any other verb stops, naming the file.
 */
export async function loadKindsOption(verb: string | undefined, args: readonly string[], env: Record<string, string | undefined> = process.env): Promise<KindFolder | undefined> {
  const folder = kindsFolderOf(verb, args, env);
  if (folder === undefined) return undefined;
  const loaded = await loadKindFolder(folder);
  const refusal = kindFilesRefusal(loaded);
  if (refusal && verb !== "run" && verb !== "operator") throw refusal;
  return loaded;
}

/** Says which kinds each folder gave, and each file that failed: its kind is not served, the others are. */
export function logKindFolders(log: Logger): void {
  for (const { folder, kinds, failures } of loadedKindFolders()) {
    log.info("kinds loaded", { folder, kinds: kinds.join(", ") });
    for (const { file, error } of failures) log.error("a kind file failed to load: its kind is not served; every other kind is", { file, error });
  }
}
