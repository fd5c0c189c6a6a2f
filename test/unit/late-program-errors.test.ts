// An error escaping a kind's program after its run has ended (a timer of the program that throws
// later) must not end the operator: operator/pulumi/program-errors.ts logs it and the process keeps
// running. An error raised outside every run (the operator's own code) still ends the process, even
// with a run in flight. Each case runs in a fresh Node.js process, after the operator's preload and
// with the operator's listeners installed, as the operator's main does; inline programs that only
// export outputs, the pinned CLI and a file backend in a temporary folder: no cluster.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { engineBinaries, repoRoot } from "../../toolchain/tools.ts";

const dir = mkdtempSync(join(tmpdir(), "appstack-late-errors-"));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Ended {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The JSON log lines a case's logger wrote. */
function logLines(stdout: string): Array<Record<string, unknown>> {
  return stdout.split("\n").filter((line) => line.startsWith("{\"time\"")).map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * Runs `body` in a process of its own, after the preload and the operator's listeners (logging
 * JSON to stdout), with `up(stackName, program)` returning the outputs or the error's message.
 */
async function runCase(name: string, body: string): Promise<Ended> {
  const backend = join(dir, name, "backend");
  mkdirSync(backend, { recursive: true });
  const script = join(dir, `${name}.mjs`);
  const module = (path: string) => JSON.stringify(pathToFileURL(join(repoRoot, path)).href);
  writeFileSync(script, `
    import { mkdirSync } from "node:fs";
    import { createRequire } from "node:module";
    await import(${module("operator/cmd/preload.ts")});
    const { createLogger } = await import(${module("operator/base/log.ts")});
    const { handleProgramErrors } = await import(${module("operator/pulumi/program-errors.ts")});
    const logged = [];
    const log = createLogger({ write: (line) => { process.stdout.write(line + "\\n"); logged.push(line); } });
    handleProgramErrors(log);
    const require = createRequire(${JSON.stringify(join(repoRoot, "package.json"))});
    const { LocalWorkspace, PulumiCommand } = require("@pulumi/pulumi/automation");
    const pulumiCommand = await PulumiCommand.get({ root: ${JSON.stringify(engineBinaries().cliRoot)} });
    async function up(stackName, program) {
      const workDir = ${JSON.stringify(join(dir, name))} + "/" + stackName;
      mkdirSync(workDir, { recursive: true });
      const stack = await LocalWorkspace.createOrSelectStack({ projectName: "late-errors", stackName, program }, {
        workDir, pulumiCommand,
        projectSettings: { name: "late-errors", runtime: "nodejs", backend: { url: ${JSON.stringify(pathToFileURL(backend).href)} } },
      });
      try {
        const result = await stack.up();
        return { ok: true, outputs: Object.fromEntries(Object.entries(result.outputs).map(([key, output]) => [key, output.value])) };
      } catch (error) {
        return { ok: false, error: String(error?.message ?? error) };
      }
    }
    ${body}
  `);
  const env = {
    ...process.env,
    PULUMI_HOME: join(dir, name, "pulumi-home"),
    PULUMI_CONFIG_PASSPHRASE: "late-errors-test",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_DIY_BACKEND_NO_LEGACY_WARNING: "true",
  };
  return await new Promise((resolve) => {
    execFile(process.execPath, [script], { cwd: dir, encoding: "utf8", env, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

test("a program's timer that throws after its `up` returned is logged, naming its stack, and the process keeps running", async () => {
  const ended = await runCase("late", `
    let release;
    const released = new Promise((resolve) => { release = resolve; });
    // The program's own continuation, so the timer and the rejection run under its run's store.
    const late = async () => {
      void released.then(() => {
        setTimeout(() => { throw new Error("the late timer's throw"); });
        void Promise.reject(new Error("the late rejection"));
      });
      return { first: "yes" };
    };
    const first = await up("late", late);
    release();
    // Both errors are logged once the operator's listeners have heard them.
    await new Promise((resolve) => {
      const check = () => logged.filter((line) => line.includes("escaped a kind's program")).length === 2 ? resolve() : setImmediate(check);
      check();
    });
    const second = await up("late", async () => ({ second: "yes" }));
    console.log(JSON.stringify({ first, second }));
    process.exit(0);
  `);
  assert.equal(ended.code, 0, `the process ended: ${ended.stderr}`);
  const result = JSON.parse(ended.stdout.trim().split("\n").at(-1)!) as unknown;
  assert.deepEqual(result, { first: { ok: true, outputs: { first: "yes" } }, second: { ok: true, outputs: { second: "yes" } } });
  const errors = logLines(ended.stdout).filter((line) => line["msg"] === "an error escaped a kind's program; the operator keeps running");
  assert.deepEqual(errors.map((line) => [line["level"], line["error"], line["project"], line["stack"]]).sort(), [
    ["error", "the late rejection", "late-errors", "late"],
    ["error", "the late timer's throw", "late-errors", "late"],
  ]);
  for (const line of errors) assert.match(String(line["trace"]), new RegExp(String(line["error"])));
});

test("an error raised outside every run ends the process non-zero, even with a run in flight", async () => {
  const ended = await runCase("own-bug", `
    let programRuns;
    const running = new Promise((resolve) => { programRuns = resolve; });
    let releaseProgram;
    const released = new Promise((resolve) => { releaseProgram = resolve; });
    // Registered after the operator's: if the operator's listener did not end the process, this
    // ends the program and the case prints its result, which the test refuses.
    process.on("uncaughtException", () => releaseProgram());
    const pending = up("running", async () => { programRuns(); await released; return { ran: "yes" }; });
    await running;
    // This module's own context: under no run's store.
    setTimeout(() => { throw new Error("the operator's own bug"); });
    console.log(JSON.stringify(await pending));
    process.exit(0);
  `);
  assert.equal(ended.code, 1, `the process did not end on the error: ${ended.stdout}`);
  const fatal = logLines(ended.stdout).filter((line) => line["fatal"] === true);
  assert.equal(fatal.length, 1);
  assert.equal(fatal[0]!["level"], "error");
  assert.equal(fatal[0]!["error"], "the operator's own bug");
  assert.match(String(fatal[0]!["trace"]), /the operator's own bug/);
});
