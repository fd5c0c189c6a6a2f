// The Pulumi SDK as appstack's entry points load it (operator/pulumi/sdk-footprint.ts): its
// function serializer loads TypeScript and Arborist on first use, not on import; its promises
// carry no stack trace and its debug messages do not go to the engine, unless asked for. Each case
// runs in a fresh Node.js process: a module, once loaded, stays loaded. Fails loudly, naming the
// patch, when an SDK upgrade changes the lines a patch (operator/pulumi/sdk-patches/) changes, or
// makes a patch unnecessary. What the patch of automation/server.js changes is tested by
// test/unit/concurrent-program-errors.test.ts.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { applied, sdkPatches } from "../../operator/pulumi/sdk-footprint.ts";
import { repoRoot } from "../../toolchain/tools.ts";

const dir = mkdtempSync(join(tmpdir(), "appstack-sdk-footprint-"));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Probe {
  readonly atImport: string[];
  readonly afterSerialize: string[];
  readonly serialized: string;
  readonly afterCodePaths: string[];
}

/** Imports the SDK (after the operator's preload when `preload`), then uses the serializer. */
async function probe(preload: boolean): Promise<Probe> {
  const script = join(dir, `probe-${preload}.mjs`);
  writeFileSync(script, `
    import { createRequire } from "node:module";
    ${preload ? `await import(${JSON.stringify(pathToFileURL(join(repoRoot, "operator", "cmd", "preload.ts")).href)});` : ""}
    const require = createRequire(${JSON.stringify(join(repoRoot, "package.json"))});
    const loaded = () => [...new Set(Object.keys(require.cache).map((f) => /node_modules\\/(typescript|@npmcli\\/arborist)\\//.exec(f)?.[1]).filter(Boolean))];
    const pulumi = require("@pulumi/pulumi");
    const atImport = loaded();
    const serialized = (await pulumi.runtime.serializeFunction(() => 6 * 7)).text;
    const afterSerialize = loaded();
    await pulumi.runtime.computeCodePaths();
    console.log(JSON.stringify({ atImport, afterSerialize, serialized, afterCodePaths: loaded() }));
  `);
  // computeCodePaths reads the package tree of the working folder: a small one of its own.
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "probe", version: "1.0.0" }));
  const { stdout } = await promisify(execFile)(process.execPath, [script], { cwd: dir, encoding: "utf8" });
  return JSON.parse(stdout) as Probe;
}

test("each patch applies to the installed SDK exactly, and a changed line makes it fail", () => {
  const require = createRequire(join(repoRoot, "package.json"));
  const sdk = join(require.resolve("@pulumi/pulumi"), "..");
  const patches = sdkPatches();
  assert.deepEqual(patches.map((p) => p.file), ["runtime/closure/parseFunction.js", "runtime/closure/codePaths.js", "runtime/debuggable.js", "log/index.js", "automation/server.js"]);
  for (const { name, file, patch } of patches) {
    const source = readFileSync(join(sdk, file), "utf8");
    const result = applied(source, patch);
    assert.ok(result !== undefined && result !== source, `${name} no longer applies to @pulumi/pulumi's ${file}: rebase it on the new SDK, or drop it`);
    // A line of its context changed upstream: not applied (the module runs as published).
    const context = patch.hunks[0]!.lines.find((line) => line.startsWith(" ") && line.trim().length > 3)!.slice(1);
    assert.equal(applied(source.replace(context, `${context} // changed`), patch), undefined, `${name} applied despite a changed line`);
  }
});

test("without the preload, importing the SDK loads TypeScript and Arborist (what the patches save)", async () => {
  const plain = await probe(false);
  assert.deepEqual(plain.atImport.sort(), ["@npmcli/arborist", "typescript"], "the SDK defers them itself now: operator/pulumi/sdk-footprint.ts can go");
});

test("with the preload, they load on first use, and the serializer works as before", async () => {
  const deferred = await probe(true);
  assert.deepEqual(deferred.atImport, []);
  assert.match(deferred.serialized, /6 \* 7/);
  assert.deepEqual(deferred.afterSerialize, ["typescript"]);
  assert.deepEqual(deferred.afterCodePaths.sort(), ["@npmcli/arborist", "typescript"]);
});

interface HotPath {
  readonly stackTrace: string | null;
  readonly sentToEngine: number[];
}

/**
 * Makes one of the SDK's promises and logs a debug and an info message through an engine client
 * whose `log` only records the severity (no connection is made), after the preload when `preload`.
 */
async function hotPath(preload: boolean, env: Record<string, string> = {}): Promise<HotPath> {
  const script = join(dir, `hot-path-${preload}.mjs`);
  writeFileSync(script, `
    import { createRequire } from "node:module";
    ${preload ? `await import(${JSON.stringify(pathToFileURL(join(repoRoot, "operator", "cmd", "preload.ts")).href)});` : ""}
    const require = createRequire(${JSON.stringify(join(repoRoot, "package.json"))});
    const sentToEngine = [];
    require("@pulumi/pulumi/proto/engine_grpc_pb.js").EngineClient.prototype.log = (request, done) => { sentToEngine.push(request.getSeverity()); done(); };
    const { debuggablePromise } = require("@pulumi/pulumi/runtime/debuggable.js");
    const log = require("@pulumi/pulumi/log/index.js");
    const promise = Promise.resolve(1);
    await debuggablePromise(promise, "probe");
    await log.debug("a debug message");
    await log.info("an info message");
    console.log(JSON.stringify({ stackTrace: promise._debugStackTrace ?? null, sentToEngine }));
  `);
  const { stdout } = await promisify(execFile)(process.execPath, [script], { cwd: dir, encoding: "utf8", env: { ...process.env, PULUMI_NODEJS_ENGINE: "127.0.0.1:1", ...env } });
  return JSON.parse(stdout) as HotPath;
}

const [debug, info] = [0, 1]; // pulumirpc.LogSeverity

test("without the preload, each SDK promise carries a stack trace and debug messages go to the engine (what the patches save)", async () => {
  const plain = await hotPath(false);
  assert.match(plain.stackTrace ?? "", /^Error\n\s+at /);
  assert.deepEqual(plain.sentToEngine, [debug, info]);
});

test("with the preload, no stack trace and no debug message to the engine; other messages go as before, and PULUMI_DEBUG_PROMISE_LEAKS still gets its traces", async () => {
  const trimmed = await hotPath(true);
  assert.equal(trimmed.stackTrace, null);
  assert.deepEqual(trimmed.sentToEngine, [info]);
  assert.match((await hotPath(true, { PULUMI_DEBUG_PROMISE_LEAKS: "true" })).stackTrace ?? "", /^Error\n\s+at /);
});
