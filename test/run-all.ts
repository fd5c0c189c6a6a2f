// `npm test`: what CI runs (.ci/run), in the order docs/development/testing.md gives.
// Two overlaps:
// - tsc and eslint run while the toolchain builds (a warm build is a cache check);
// - the real node's binaries and images are built while the unit and kwok end-to-end files run,
//   at the lowest CPU priority (test/real-node/prebuild.ts), so the tests keep the cores first and
//   the real-node files, which run after them, find what they need cached. On a cold machine the
//   cores are busy throughout, so this moves build time rather than hiding it
//   (docs/measurements.md#ci-duration).
// The exit status is the first failure's; the real-node files run whether or not the others passed.
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, globSync, openSync, readFileSync } from "node:fs";

interface Step {
  readonly child: ChildProcess;
  readonly ended: Promise<number>;
}

const running = new Set<ChildProcess>();

/** Runs a command; with `logFile`, its output goes there and its last lines are printed when it ends. */
function start(command: string, args: readonly string[], logFile?: string): Step {
  const log = logFile ? openSync(logFile, "w") : undefined;
  const child = spawn(command, args, { stdio: log === undefined ? "inherit" : ["ignore", log, log] });
  if (log !== undefined) closeSync(log);
  running.add(child);
  const ended = new Promise<number>((resolve) =>
    child.on("close", (code, signal) => {
      running.delete(child);
      if (logFile) {
        const tail = readFileSync(logFile, "utf8").trimEnd().split("\n").slice(-15).join("\n");
        process.stderr.write(`${logFile} (its last lines):\n${tail}\n`);
      }
      resolve(code ?? (signal ? 1 : 0));
    }),
  );
  return { child, ended };
}

const tsx = (args: readonly string[], logFile?: string) => start(process.execPath, ["--import", "tsx", ...args], logFile);

function testRunner(name: string, concurrency: number, patterns: readonly string[]): Step {
  const files = patterns.flatMap((pattern) => globSync(pattern).sort());
  return tsx([
    "--test",
    "--test-reporter=spec",
    "--test-reporter-destination=stdout",
    "--test-reporter=./test/reporters/file-times.mjs",
    `--test-reporter-destination=.test-times-${name}.tsv`,
    `--test-concurrency=${concurrency}`,
    ...files,
  ]);
}

async function inSequence(...steps: Array<() => Step>): Promise<number> {
  for (const step of steps) {
    const code = await step().ended;
    if (code !== 0) return code;
  }
  return 0;
}

// A stop of `npm test` stops what runs; each test runner stops its files.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => running.forEach((child) => child.kill(signal)));

const [toolchain, checks] = await Promise.all([
  tsx(["operator/cmd/cli.ts", "toolchain"]).ended,
  inSequence(
    // npm puts node_modules/.bin first on PATH, its Node.js 24 included.
    () => start("tsc", ["--noEmit"]),
    () => start("eslint", ["."]),
  ),
]);
if (toolchain !== 0 || checks !== 0) process.exit(toolchain || checks);

const prebuild = tsx(["test/real-node/prebuild.ts"], ".prebuild-real-node.log");
const unitAndE2e = await testRunner("unit", 2, ["test/unit/*.test.ts", "test/e2e/*.test.ts"]).ended;
await prebuild.ended;
const realNode = await testRunner("real-node", 1, ["test/real-node/*.test.ts"]).ended;
process.exit(unitAndE2e || realNode);
