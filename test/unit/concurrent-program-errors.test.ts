// Two inline programs at once in one process, as the operator runs its objects' operations: one
// throws asynchronously (a rejected promise nobody awaits, a throw in a timer), the other is
// healthy. The healthy `up` must succeed and the throwing one fail with its own errors. The SDK
// listens for such errors process-wide, once per run; the patch
// operator/pulumi/sdk-patches/0005-run-errors-stay-in-their-run.patch has each run count only the
// errors raised under its own async store. The pinned CLI with a file backend in a temporary
// folder, and programs that only export outputs: no cluster. Each case runs in a fresh Node.js
// process, after the operator's preload or without it (the SDK as published).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { engineBinaries, repoRoot } from "../../toolchain/tools.ts";

const dir = mkdtempSync(join(tmpdir(), "appstack-program-errors-"));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Settled {
  readonly ok: boolean;
  /** The outputs on success, the error's message otherwise. */
  readonly outputs?: Record<string, unknown>;
  readonly error?: string;
}

/**
 * Runs `up` of the throwing and the healthy program at once, in a process of its own (after the
 * operator's preload when `preload`), on stacks of their own. The throwing program raises its
 * errors once the healthy one runs, and both end only once the process has seen both errors (a
 * listener of the script's own, registered before the SDK's): so each run's listeners are in
 * place when they are raised, whatever the timing.
 */
async function concurrentUps(preload: boolean): Promise<{ throwing: Settled; healthy: Settled }> {
  const name = preload ? "patched" : "published";
  const backend = join(dir, name, "backend");
  mkdirSync(backend, { recursive: true });
  const script = join(dir, `${name}.mjs`);
  writeFileSync(script, `
    import { mkdirSync } from "node:fs";
    import { createRequire } from "node:module";
    ${preload ? `await import(${JSON.stringify(pathToFileURL(join(repoRoot, "operator", "cmd", "preload.ts")).href)});` : ""}
    const require = createRequire(${JSON.stringify(join(repoRoot, "package.json"))});
    const { LocalWorkspace, PulumiCommand } = require("@pulumi/pulumi/automation");

    let seen = 0;
    let bothRaised;
    const raised = new Promise((resolve) => { bothRaised = resolve; });
    const note = () => { if (++seen === 2) bothRaised(); };
    process.on("uncaughtException", note);
    process.on("unhandledRejection", note);
    let healthyRuns;
    const running = new Promise((resolve) => { healthyRuns = resolve; });

    const throwing = async () => {
      await running;
      Promise.reject(new Error("the throwing program's rejection"));
      setTimeout(() => { throw new Error("the throwing program's throw"); });
      await raised;
      return { never: "reported" };
    };
    const healthy = async () => {
      healthyRuns();
      await raised;
      return { healthy: "yes" };
    };

    const pulumiCommand = await PulumiCommand.get({ root: ${JSON.stringify(engineBinaries().cliRoot)} });
    async function up(stackName, program) {
      const workDir = ${JSON.stringify(join(dir, name))} + "/" + stackName;
      mkdirSync(workDir);
      const stack = await LocalWorkspace.createStack({ projectName: "program-errors", stackName, program }, {
        workDir, pulumiCommand,
        projectSettings: { name: "program-errors", runtime: "nodejs", backend: { url: ${JSON.stringify(pathToFileURL(backend).href)} } },
      });
      try {
        const result = await stack.up();
        return { ok: true, outputs: Object.fromEntries(Object.entries(result.outputs).map(([key, output]) => [key, output.value])) };
      } catch (error) {
        return { ok: false, error: String(error?.message ?? error) };
      }
    }
    const [throwingResult, healthyResult] = await Promise.all([up("throwing", throwing), up("healthy", healthy)]);
    console.log(JSON.stringify({ throwing: throwingResult, healthy: healthyResult }));
    process.exit(0);
  `);
  const env = {
    ...process.env,
    PULUMI_HOME: join(dir, name, "pulumi-home"),
    PULUMI_CONFIG_PASSPHRASE: "program-errors-test",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_DIY_BACKEND_NO_LEGACY_WARNING: "true",
  };
  const { stdout } = await promisify(execFile)(process.execPath, [script], { cwd: dir, encoding: "utf8", env, maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as { throwing: Settled; healthy: Settled };
}

const ownErrors = /One or more errors occurred: the throwing program's rejection, the throwing program's throw/;

test("without the preload, the errors of one program fail the other program's `up` too (what the patch fixes)", async () => {
  const { throwing, healthy } = await concurrentUps(false);
  assert.equal(throwing.ok, false);
  assert.match(throwing.error ?? "", ownErrors);
  assert.equal(healthy.ok, false, "the SDK keeps each run's errors to its run now: sdk-patches/0005-run-errors-stay-in-their-run.patch can go");
  assert.match(healthy.error ?? "", ownErrors);
});

test("with the preload, the healthy program's `up` succeeds and the throwing one fails with its own errors", async () => {
  const { throwing, healthy } = await concurrentUps(true);
  assert.deepEqual(healthy, { ok: true, outputs: { healthy: "yes" } });
  assert.equal(throwing.ok, false);
  assert.match(throwing.error ?? "", ownErrors);
});
