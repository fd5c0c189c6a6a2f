// What the Pulumi SDK spends, in the operator's process, on what appstack never uses. A module
// load hook rewrites a few lines of the SDK as it is loaded; no library does this. If an SDK
// upgrade changes a line, nothing is rewritten and the SDK runs as published;
// test/unit/sdk-footprint.test.ts fails loudly on that.
//
// Memory: the SDK's function serializer (`pulumi.runtime.serializeFunction`, `computeCodePaths`)
// needs the TypeScript compiler (8.7 MB of JavaScript) and npm's Arborist, and the SDK requires
// both as it is imported. appstack's programs only declare resources and never serialize a
// function, yet the two cost the operator 37 MiB of its 178 MiB RSS at start (21 MiB of heap).
// The SDK already defers TypeScript everywhere else (tsutils.js: "to avoid always loading"); these
// two top-level requires are what is left, and each module is required on its first use instead.
//
// CPU: in a CPU profile of the operator over 100 new Apps, 7% of its time went to a stack trace
// the SDK captures and formats for each of its promises (`new Error().stack`), read only when
// PULUMI_DEBUG_PROMISE_LEAKS asks for it, and about 5% to debug messages the SDK sends the engine
// (four to five per resource, each a gRPC round trip, and work in the CLI too), which the engine
// shows only under `--debug`: appstack's engines never run with it.
import { registerHooks } from "node:module";

interface Rewrite {
  /** The end of the module's URL. */
  readonly file: string;
  readonly published: string;
  readonly rewritten: string;
}

export const sdkRewrites: readonly Rewrite[] = [
  {
    file: "/node_modules/@pulumi/pulumi/runtime/closure/parseFunction.js",
    published: 'const ts = require("../../typescript-shim");',
    // Every use is `ts.<name>` inside a function.
    rewritten: 'let loadedTs; const ts = new Proxy({}, { get: (_, name) => (loadedTs ??= require("../../typescript-shim"))[name] });',
  },
  {
    file: "/node_modules/@pulumi/pulumi/runtime/closure/codePaths.js",
    published: 'const arborist = __importStar(require("@npmcli/arborist"));',
    // The one use is `new arborist.Arborist(...)` inside computeCodePaths.
    rewritten: 'const arborist = { get Arborist() { return require("@npmcli/arborist").Arborist; } };',
  },
  {
    file: "/node_modules/@pulumi/pulumi/runtime/debuggable.js",
    published: 'Object.defineProperty(p, "_debugStackTrace", { writable: true, value: new Error().stack });',
    // Read only by promiseDebugString, whose every caller checks debugPromiseLeaks first.
    rewritten: 'Object.defineProperty(p, "_debugStackTrace", { writable: true, value: exports.debugPromiseLeaks ? new Error().stack : undefined });',
  },
  {
    file: "/node_modules/@pulumi/pulumi/log/index.js",
    published: "function debug(msg, resource, streamId, ephemeral) {\n    const engine = settings_1.getEngine();\n    if (engine) {",
    // As the SDK does with no engine: printed only under its excessiveDebugOutput, else dropped.
    rewritten: "function debug(msg, resource, streamId, ephemeral) {\n    const engine = undefined;\n    if (engine) {",
  },
];

let registered = false;

/** Must run before anything imports `@pulumi/pulumi`: see operator/cmd/preload.ts. */
export function trimSdk(): void {
  if (registered) return;
  registered = true;
  registerHooks({
    load(url, context, nextLoad) {
      const loaded = nextLoad(url, context);
      const rewrite = sdkRewrites.find((r) => url.endsWith(r.file));
      if (!rewrite || loaded.source === undefined) return loaded;
      const source = typeof loaded.source === "string" ? loaded.source : new TextDecoder().decode(loaded.source);
      return { ...loaded, source: source.replace(rewrite.published, rewrite.rewritten) };
    },
  });
}
