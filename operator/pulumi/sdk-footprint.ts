// What the Pulumi SDK spends, in the operator's process, on what appstack never uses, taken out by
// patches to the SDK, and what it gets wrong with many inline programs at once in one process, put
// right by another (sdk-patches/*.patch, each with its why, gain, upstream text and when to drop
// it, as the CLI's and the provider's are kept: docs/development/toolchain.md). npm has no
// patch step, and node_modules is what `npm ci` installs, in a clone and in the image alike; so
// the patches apply as the SDK's modules load, through a module load hook, with jsdiff and no
// fuzz. A patch that no longer applies (an SDK upgrade changed its lines) leaves the module as
// published; test/unit/sdk-footprint.test.ts fails loudly on that, naming the patch.
import { readdirSync, readFileSync } from "node:fs";
import { registerHooks } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { applyPatch, parsePatch, type StructuredPatch } from "diff";

const patchFolder = fileURLToPath(new URL("./sdk-patches/", import.meta.url));

export interface SdkPatch {
  /** The patch file's name. */
  readonly name: string;
  /** The file it changes, relative to the @pulumi/pulumi package. */
  readonly file: string;
  readonly patch: StructuredPatch;
}

/** The header fields every patch gives (DEP-3, as toolchain/patch-module requires of the tools' patches). */
const headerFields = ["Description", "Gain", "Bug", "Forwarded", "Drop-when"];

/** Every patch of sdk-patches/, in name order; each changes one file of the package. */
export function sdkPatches(folder = patchFolder): SdkPatch[] {
  return readdirSync(folder).filter((name) => name.endsWith(".patch")).sort().map((name) => {
    const text = readFileSync(join(folder, name), "utf8");
    const header = text.slice(0, Math.max(0, text.indexOf("\n---\n")));
    const missing = headerFields.filter((field) => !new RegExp(`^${field}: `, "m").test(header));
    if (missing.length > 0) throw new Error(`${name}: its header lacks ${missing.join(", ")}`);
    const files = parsePatch(text);
    const [patch] = files;
    if (files.length !== 1 || !patch?.oldFileName) throw new Error(`${name}: a patch of the SDK changes exactly one file`);
    return { name, file: patch.oldFileName.replace(/^a\//, ""), patch };
  });
}

/** `source` with `patch` applied, exactly; undefined when its lines are not there as the patch has them. */
export function applied(source: string, patch: StructuredPatch): string | undefined {
  const result = applyPatch(source, patch, { fuzzFactor: 0 });
  return result === false ? undefined : result;
}

let registered = false;

/** Must run before anything imports `@pulumi/pulumi`: see operator/cmd/preload.ts. */
export function trimSdk(): void {
  if (registered) return;
  registered = true;
  const byUrlEnd = sdkPatches().map((patch) => ({ ...patch, urlEnd: `/node_modules/@pulumi/pulumi/${patch.file}` }));
  registerHooks({
    load(url, context, nextLoad) {
      const loaded = nextLoad(url, context);
      const patches = byUrlEnd.filter((p) => url.endsWith(p.urlEnd));
      if (patches.length === 0 || loaded.source === undefined) return loaded;
      let source = typeof loaded.source === "string" ? loaded.source : new TextDecoder().decode(loaded.source);
      for (const { patch } of patches) source = applied(source, patch) ?? source;
      return { ...loaded, source };
    },
  });
}
