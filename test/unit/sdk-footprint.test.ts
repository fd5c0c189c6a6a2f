// The Pulumi SDK's function serializer loads TypeScript and Arborist on first use, not on import,
// in a process started the way appstack's entry points start. Each case runs in a fresh Node.js
// process: a module, once loaded, stays loaded. Fails loudly when an SDK upgrade changes the lines
// operator/pulumi/sdk-footprint.ts rewrites, or makes the rewrite unnecessary.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { deferrals } from "../../operator/pulumi/sdk-footprint.ts";
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

test("each rewritten line is in the installed SDK, once", () => {
  const require = createRequire(join(repoRoot, "package.json"));
  const sdk = join(require.resolve("@pulumi/pulumi"), "..");
  for (const deferral of deferrals) {
    const source = readFileSync(join(sdk, deferral.file.replace("/node_modules/@pulumi/pulumi/", "")), "utf8");
    assert.equal(source.split(deferral.eager).length - 1, 1, `${deferral.file} no longer has: ${deferral.eager}`);
  }
});

test("without the preload, importing the SDK loads TypeScript and Arborist (what the rewrite saves)", async () => {
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
