// `npm test`'s test files, after the toolchain, tsc and eslint: two runners at once. The unit and
// kwok end-to-end files run two at a time; the image and real-node files one at a time (only one
// real node runs on a machine), beside them. One after the other, they left the cores partly idle,
// the first while kwok clusters wait on their API servers, the second more, while images are pulled
// and pods start: together they fill what each leaves (docs/development/testing.md).
// The real-node runner's lines are prefixed, so that the two reports stay readable interleaved;
// each runner writes its files' times (test/reporters/file-times.mjs). The exit status is the
// first failure's, after both have ended.
import { spawn } from "node:child_process";
import { globSync } from "node:fs";
import { createInterface } from "node:readline";

const steps = [
  { name: "unit", concurrency: 2, files: ["test/unit/*.test.ts", "test/e2e/*.test.ts"], prefix: "" },
  { name: "real-node", concurrency: 1, files: ["test/real-node/*.test.ts"], prefix: "[real-node] " },
];

function run(step) {
  const files = step.files.flatMap((pattern) => globSync(pattern).sort());
  const args = [
    "--import", "tsx", "--test",
    "--test-reporter=spec", "--test-reporter-destination=stdout",
    "--test-reporter=./test/reporters/file-times.mjs", `--test-reporter-destination=.test-times-${step.name}.tsv`,
    `--test-concurrency=${step.concurrency}`, ...files,
  ];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  for (const [stream, out] of [[child.stdout, process.stdout], [child.stderr, process.stderr]]) {
    createInterface({ input: stream, crlfDelay: Infinity }).on("line", (line) => out.write(`${step.prefix}${line}\n`));
  }
  const ended = new Promise((resolve) => child.on("close", (code, signal) => resolve(code ?? (signal ? 1 : 0))));
  return { child, ended };
}

const running = steps.map(run);
// A stop of `npm test` stops both runners, which stop their files.
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => running.forEach(({ child }) => child.kill(signal)));
const codes = await Promise.all(running.map(({ ended }) => ended));
process.exitCode = codes.find((code) => code !== 0) ?? 0;
