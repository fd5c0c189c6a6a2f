// The pinned CLI finds a stack's checkpoint by name (toolchain/pulumi/patches/0001-diy-stack-file-by-name.patch): upstream's
// DIY backend listed the project's whole stacks folder for it on every read and checkpoint write,
// a cost that grew with the number of stacks. Fails if the CLI lists that folder again (seen with
// strace: getdents64 on it) or if the name it finds is not upstream's: the plain file, a
// compressed one, and the newer of two when both exist (there the listing still decides). The CLI
// runs as the engines do, without the legacy layout's scan (engine.ts: withoutLegacyScan).
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { withoutLegacyScan } from "../../operator/pulumi/engine.ts";
import { findOnPath, toolPath } from "../../toolchain/tools.ts";

const dir = mkdtempSync(join(tmpdir(), "appstack-cli-stack-files-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const state = join(dir, "state");
const stacks = join(state, ".pulumi", "stacks", "files");
const env = { ...process.env, PULUMI_HOME: join(dir, "home"), PULUMI_SKIP_UPDATE_CHECK: "true", PULUMI_CONFIG_PASSPHRASE: "files", PULUMI_BACKEND_URL: pathToFileURL(state).href, ...withoutLegacyScan };

/** The project folder and the backend's. */
function project(): void {
  mkdirSync(join(dir, "project"), { recursive: true });
  mkdirSync(state, { recursive: true });
  writeFileSync(join(dir, "project", "Pulumi.yaml"), "name: files\nruntime: nodejs\n");
}

function pulumi(...args: string[]): Promise<string> {
  return promisify(execFile)(toolPath("pulumi"), [...args, "--non-interactive"], { cwd: join(dir, "project"), encoding: "utf8", env }).then(({ stdout }) => stdout);
}

/** The stack's checkpoint as `stack export` reads it: its manifest's time tells the files apart. */
async function exportedTime(stack: string): Promise<string> {
  return (JSON.parse(await pulumi("stack", "export", "--stack", stack)) as { deployment: { manifest: { time: string } } }).deployment.manifest.time;
}

/** The file `name` with its manifest's time set to `time`, as plain JSON. */
function checkpointWithTime(name: string, time: string): string {
  const file = JSON.parse(readFileSync(join(stacks, name), "utf8")) as { checkpoint: { latest: { manifest: { time: string } } } };
  file.checkpoint.latest.manifest.time = time;
  return JSON.stringify(file);
}

test("the CLI reads and writes a checkpoint without listing the stacks folder", { skip: findOnPath("strace") ? false : "needs strace (apt-get install strace)" }, async () => {
  project();
  await pulumi("stack", "init", "one");
  await pulumi("stack", "tag", "set", "made", "here", "--stack", "one");
  for (let i = 0; i < 20; i++) copyFileSync(join(stacks, "one.json"), join(stacks, `other-${i}.json`));
  const trace = join(dir, "strace.txt");
  for (const args of [["stack", "export", "--stack", "one"], ["stack", "tag", "set", "again", "yes", "--stack", "one"]]) {
    execFileSync("strace", ["-f", "-y", "-e", "trace=getdents64", "-o", trace, toolPath("pulumi"), ...args, "--non-interactive"], { cwd: join(dir, "project"), env, stdio: "ignore" });
    const listings = readFileSync(trace, "utf8").split("\n").filter((line) => line.includes(`${stacks}>`));
    assert.deepEqual(listings, [], `pulumi ${args.join(" ")} listed the stacks folder`);
  }
});

test("the CLI finds the checkpoint upstream finds: plain, compressed, and the newer of two", async () => {
  project();
  await pulumi("stack", "init", "two");
  await pulumi("stack", "tag", "set", "made", "here", "--stack", "two");
  const plain = checkpointWithTime("two.json", "2026-01-01T00:00:00Z");
  writeFileSync(join(stacks, "two.json"), plain);
  assert.equal(await exportedTime("two"), "2026-01-01T00:00:00Z", "the plain file");

  // Only compressed: found by its name.
  writeFileSync(join(stacks, "two.json.gz"), gzipSync(checkpointWithTime("two.json", "2026-02-02T00:00:00Z")));
  renameSync(join(stacks, "two.json"), join(dir, "two.json.aside"));
  rmSync(join(stacks, "two.json.attrs"), { force: true });
  assert.equal(await exportedTime("two"), "2026-02-02T00:00:00Z", "the compressed file");

  // Both: the newer one, as upstream's listing decides.
  renameSync(join(dir, "two.json.aside"), join(stacks, "two.json"));
  const past = new Date("2026-01-01T00:00:00Z");
  utimesSync(join(stacks, "two.json"), past, past);
  assert.equal(await exportedTime("two"), "2026-02-02T00:00:00Z", "the compressed file, newer than the plain one");
  utimesSync(join(stacks, "two.json.gz"), past, new Date("2025-01-01T00:00:00Z"));
  assert.equal(await exportedTime("two"), "2026-01-01T00:00:00Z", "the plain file, newer than the compressed one");
});
