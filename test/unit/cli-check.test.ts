// The CLI's version check (`pulumi version`, once per process, before its first command) is held
// to the operation's deadline like every other command, and a check that failed is not kept: a
// CLI that fails its check, then one that never answers, then the real one, and the same driver
// converges. No cluster: the program declares no resources.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { engineBinaries, toolPath } from "../../toolchain/tools.ts";
import { createLogger } from "../../operator/base/log.ts";
import { enginesOf } from "../../operator/pulumi/orphans.ts";
import { OperationTimedOut } from "../../operator/pulumi/stack-errors.ts";
import { prepareWorkDir } from "../../operator/pulumi/stack-selection.ts";
import { StackDriver } from "../../operator/pulumi/stacks.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";

const dir = mkdtempSync(join(tmpdir(), "appstack-cli-check-"));
after(() => rmSync(dir, { recursive: true, force: true }));
mkdirSync(join(dir, "backend"));
const cliRoot = join(dir, "cli");
mkdirSync(join(cliRoot, "bin"), { recursive: true });
const backendUrl = pathToFileURL(join(dir, "backend")).href;
// The deadline must leave the real CLI's `up` at the end room on a busy machine (2 s did not,
// with a whole test suite running beside it); the hung check costs the test this long.
const deadlineMs = 6_000;
const settings = { backendUrl, pulumiHome: join(dir, "pulumi-home"), passphrase: "cli-check-test", workDir: await prepareWorkDir(join(dir, "work"), new StateIo(deadlineMs)), operationTimeoutMs: deadlineMs, binaries: { cliRoot, kubernetesProvider: engineBinaries().kubernetesProvider } };
const warnings: string[] = [];
const log = createLogger({ level: "warn", write: (line) => warnings.push(line) });
const program = () => Promise.resolve({ greeting: "hello" });

/** What `<cliRoot>/bin/pulumi` does from now on. */
function cliRuns(script: string): void {
  writeFileSync(join(cliRoot, "bin", "pulumi"), `#!/bin/bash\n${script}\n`, { mode: 0o755 });
}

test("a CLI check that fails or never answers ends at the deadline and is tried again by the next operation", { timeout: 120_000 }, async () => {
  const driver = new StackDriver(settings, log);

  cliRuns(`echo "the CLI is broken" >&2; exit 1`);
  await assert.rejects(driver.up("first", program, { refresh: false }), /the CLI is broken/);

  // A process named pulumi with the argument `version` that never answers (a stalled disk).
  cliRuns(`exec -a pulumi ${process.execPath} -e "setTimeout(() => {}, 600_000)" "$@"`);
  await assert.rejects(driver.up("first", program, { refresh: false }), (error: unknown) => {
    assert.ok(error instanceof OperationTimedOut, String(error));
    assert.match(error.message, /pulumi version did not finish within its deadline of 6 s; it was killed/);
    return true;
  });
  assert.deepEqual(enginesOf(), [], "the check outlived its deadline");
  assert.ok(warnings.some((line) => line.includes("killed a Pulumi engine: pulumi version did not finish within its deadline")), warnings.join("\n"));

  cliRuns(`exec ${toolPath("pulumi")} "$@"`);
  const operation = await driver.up("first", program, { refresh: false });
  assert.equal(operation.result, "succeeded");
  assert.deepEqual(enginesOf(), []);
});
