// Kinds from a folder of kind files (--kinds, APPSTACK_KINDS_DIR, appstack:kinds): every `*.ts` file
// in it, each `export default defineKind({...})`, in erasable TypeScript that Node.js runs as it
// is. They are loaded and registered (kinds.ts) before anything reads the kinds, so their CRDs,
// RBAC, policies and watches are derived with App's and Memcached's.
//
// A kind file lives anywhere, outside this repository too, so `appstack/kinds` (authoring.ts) and
// the Pulumi SDK are resolved for files of the folder as if imported from here: through this
// package's own exports, to the running operator's copies. One SDK, or a kind's resources would
// register with a runtime that runs no program.
//
// A file that fails (it does not load, its default export is no kind, its kind is refused) is
// kept with its error: the operator logs it and serves every other kind; the install refuses to
// render (kindFilesRefusal).
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { registerHooks } from "node:module";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Workload } from "../crds/types.ts";
import { registerKind } from "./kinds.ts";
import { isDefinedKind, type WorkloadDescription } from "./workload.ts";

/** A kind file that could not be loaded, and why. */
export interface KindFileFailure {
  readonly file: string;
  readonly error: string;
}

/** What a folder gave: the kinds registered, and the files that failed. */
export interface KindFolder {
  readonly folder: string;
  readonly kinds: readonly string[];
  readonly failures: readonly KindFileFailure[];
}

/** The folders loaded, as file URLs ending in `/`: their files' imports are resolved from here. */
const folders: string[] = [];
const loaded: KindFolder[] = [];
/** A digest of each file the hooks loaded, by URL: of the source that runs, read once. */
const sourceDigests = new Map<string, string>();

/** The specifiers a kind file takes from the operator: its public module and the Pulumi SDK. */
const fromOperator = (specifier: string) => specifier === "appstack" || specifier.startsWith("appstack/") || specifier.startsWith("@pulumi/");

function hookSpecifiers(): void {
  if (folders.length > 0) return;
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const parent = context.parentURL;
      // Resolved here, as this module resolves it, through this package's exports.
      if (parent && fromOperator(specifier) && folders.some((folder) => parent.startsWith(folder))) return { url: import.meta.resolve(specifier), shortCircuit: true };
      return nextResolve(specifier, context);
    },
    // As an ES module in TypeScript, stripped by Node.js itself, whatever loader runs: under tsx
    // (the install program) a `.ts` file outside a package of type module would be CommonJS, and
    // the Pulumi language host compiles CommonJS TypeScript with ts-node and this repository's tsconfig.
    load(url, context, nextLoad) {
      if (folders.some((folder) => url.startsWith(folder)) && url.endsWith(".ts")) {
        const source = readFileSync(fileURLToPath(url));
        sourceDigests.set(url, createHash("sha256").update(source).digest("hex"));
        return { format: "module-typescript", source, shortCircuit: true };
      }
      return nextLoad(url, context);
    },
  });
}

/** What a folder's files give, registering nothing: each kind with its file, and the files that failed. */
export interface KindFiles {
  readonly folder: string;
  /** `sourceDigest`: of the file's source as it was loaded, what tells its kind's program changed (kinds.ts kindProgramVersion). */
  readonly kinds: readonly { readonly file: string; readonly definition: WorkloadDescription<Workload>; readonly sourceDigest: string }[];
  readonly failures: readonly KindFileFailure[];
}

/**
 * Imports every kind file of `folder` and registers none of them: what `appstack new kind` reads
 * of a folder's kinds (their group, their names) without making them the process's kinds. An
 * unreadable folder is an error; a failing file is returned with its error.
 */
export async function importKindFolder(folder: string): Promise<KindFiles> {
  const path = resolve(folder);
  let files: string[];
  try {
    files = readdirSync(path).filter((name) => name.endsWith(".ts") && !name.endsWith(".d.ts")).sort();
  } catch (error) {
    throw new Error(`the kinds folder ${path} cannot be read: ${(error as Error).message}`, { cause: error });
  }
  hookSpecifiers();
  const url = pathToFileURL(path).href.replace(/\/?$/, "/");
  if (!folders.includes(url)) folders.push(url);
  const kinds: { file: string; definition: WorkloadDescription<Workload>; sourceDigest: string }[] = [];
  const failures: KindFileFailure[] = [];
  for (const name of files) {
    const file = join(path, name);
    try {
      const href = pathToFileURL(file).href;
      const definition = ((await import(href)) as { default?: unknown }).default;
      if (!isDefinedKind(definition)) throw new Error("its default export is not a kind: end it with `export default defineKind({...})`");
      kinds.push({ file, definition, sourceDigest: sourceDigests.get(href) ?? createHash("sha256").update(readFileSync(file)).digest("hex") });
    } catch (error) {
      failures.push({ file, error: errorText(error) });
    }
  }
  return { folder: path, kinds, failures };
}

/** Loads and registers every kind file of `folder`; an unreadable folder is an error, a failing file is returned with its error. */
export async function loadKindFolder(folder: string): Promise<KindFolder> {
  const imported = await importKindFolder(folder);
  const kinds: string[] = [];
  const failures = [...imported.failures];
  for (const { file, definition, sourceDigest } of imported.kinds) {
    try {
      registerKind(definition, sourceDigest);
      kinds.push(definition.api.kind);
    } catch (error) {
      failures.push({ file, error: errorText(error) });
    }
  }
  // In the folder's order, whichever step a file failed at.
  failures.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  const result = { folder: imported.folder, kinds, failures };
  loaded.push(result);
  return result;
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Every folder loaded in this process, with its kinds and failures: what the operator logs at start. */
export function loadedKindFolders(): readonly KindFolder[] {
  return loaded;
}

/** The error that refuses an install of a folder with a failing file, naming each file; undefined when none failed. */
export function kindFilesRefusal(folder: KindFolder): Error | undefined {
  if (folder.failures.length === 0) return undefined;
  return new Error(`the kinds folder ${folder.folder}: ${folder.failures.map((failure) => `${failure.file} failed to load: ${failure.error}`).join("; ")}`);
}
