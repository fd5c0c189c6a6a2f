// The Pulumi SDK's function serializer (`pulumi.runtime.serializeFunction`, `computeCodePaths`)
// needs the TypeScript compiler (8.7 MB of JavaScript) and npm's Arborist, and the SDK requires
// both as it is imported. appstack's programs only declare resources and never serialize a
// function, yet the two cost the operator 37 MiB of its 178 MiB RSS at start (21 MiB of heap).
// The SDK already defers TypeScript everywhere else (tsutils.js: "to avoid always loading"); these
// two top-level requires are what is left. A module load hook rewrites those two lines so that
// each module is required on its first use instead. No library does this. If an SDK upgrade
// changes either line, nothing is rewritten and the modules load eagerly as before;
// test/unit/sdk-footprint.test.ts fails loudly on that.
import { registerHooks } from "node:module";

interface Deferral {
  /** The end of the module's URL. */
  readonly file: string;
  readonly eager: string;
  readonly deferred: string;
}

export const deferrals: readonly Deferral[] = [
  {
    file: "/node_modules/@pulumi/pulumi/runtime/closure/parseFunction.js",
    eager: 'const ts = require("../../typescript-shim");',
    // Every use is `ts.<name>` inside a function.
    deferred: 'let loadedTs; const ts = new Proxy({}, { get: (_, name) => (loadedTs ??= require("../../typescript-shim"))[name] });',
  },
  {
    file: "/node_modules/@pulumi/pulumi/runtime/closure/codePaths.js",
    eager: 'const arborist = __importStar(require("@npmcli/arborist"));',
    // The one use is `new arborist.Arborist(...)` inside computeCodePaths.
    deferred: 'const arborist = { get Arborist() { return require("@npmcli/arborist").Arborist; } };',
  },
];

let registered = false;

/** Must run before anything imports `@pulumi/pulumi`: see operator/cmd/preload.ts. */
export function deferUnusedSdkModules(): void {
  if (registered) return;
  registered = true;
  registerHooks({
    load(url, context, nextLoad) {
      const loaded = nextLoad(url, context);
      const deferral = deferrals.find((d) => url.endsWith(d.file));
      if (!deferral || loaded.source === undefined) return loaded;
      const source = typeof loaded.source === "string" ? loaded.source : new TextDecoder().decode(loaded.source);
      return { ...loaded, source: source.replace(deferral.eager, deferral.deferred) };
    },
  });
}
