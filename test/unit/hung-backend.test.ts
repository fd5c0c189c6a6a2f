// A backend that never answers: the pinned CLI opens `.pulumi/meta.yaml` first in every command
// on a file backend, and when that file is a named pipe nobody writes, the open blocks, as a read
// from a hung file system or object store would. Every command the stack driver runs besides the
// engine's operations (stack init, export, rm; the warm-up) must then end at the operation's deadline:
// killed, its lock broken, and the operation failed with OperationTimedOut. Once the backend
// answers again, the same driver converges. No cluster: the program declares no resources.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { createLogger } from "../../operator/base/log.ts";
import { enginesOf } from "../../operator/pulumi/orphans.ts";
import { OperationTimedOut } from "../../operator/pulumi/stack-errors.ts";
import { projectName } from "../../operator/pulumi/stack-names.ts";
import { prepareWorkDir } from "../../operator/pulumi/stack-selection.ts";
import { StackDriver } from "../../operator/pulumi/stacks.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";
import { lockFiles } from "../helpers/operator.ts";
import { engineBinaries } from "../../toolchain/tools.ts";

const dir = mkdtempSync(join(tmpdir(), "appstack-hung-backend-"));
after(() => rmSync(dir, { recursive: true, force: true }));
mkdirSync(join(dir, "backend"));
const backendUrl = pathToFileURL(join(dir, "backend")).href;
const meta = join(dir, "backend", ".pulumi", "meta.yaml");
// Every command's deadline, the hung ones' and the healthy ones' alike (a driver has one): short, so
// that each hang ends soon, yet above what a healthy `stack init` and `up` take on a loaded machine
// (at 2 s, a first `up` beside a full test run passed it).
const deadlineMs = 6_000;
const settings = { backendUrl, pulumiHome: join(dir, "pulumi-home"), passphrase: "hung-backend-test", binaries: engineBinaries(), workDir: await prepareWorkDir(join(dir, "work"), new StateIo(deadlineMs)), operationTimeoutMs: deadlineMs };
const warnings: string[] = [];
const log = createLogger({ level: "warn", write: (line) => warnings.push(line) });
const program = () => Promise.resolve({ greeting: "hello" });
const checkpoint = (stack: string) => join(dir, "backend", ".pulumi", "stacks", projectName, `${stack}.json`);

/** Runs `work` while the backend hangs: meta.yaml is a pipe with no writer until `work` is done. */
async function whileHung<T>(work: () => Promise<T>): Promise<T> {
  renameSync(meta, `${meta}.real`);
  execFileSync("mkfifo", [meta]);
  try {
    return await work();
  } finally {
    rmSync(meta);
    renameSync(`${meta}.real`, meta);
  }
}

/** The operation fails with OperationTimedOut for `command`, and leaves no CLI process and no lock behind. */
async function timesOut(operation: Promise<unknown>, command: string): Promise<void> {
  await assert.rejects(operation, (error: unknown) => {
    assert.ok(error instanceof OperationTimedOut, String(error));
    assert.match(error.message, new RegExp(`pulumi ${command} did not finish within its deadline of ${deadlineMs / 1000} s; it was killed`));
    return true;
  });
  assert.deepEqual(enginesOf(), [], "a CLI process outlived its deadline");
  assert.deepEqual(lockFiles(dir), [], "a lock outlived its command");
}

// Without the deadlines this test hangs: its own timeout fails it.
test("with a backend that never answers, stack init, export and rm end at the deadline; the driver converges once it answers", { timeout: 120_000 }, async () => {
  const driver = new StackDriver(settings, log);
  // The backend's meta.yaml exists once a first command ran: that stack is made while it answers.
  await driver.up("existing", program, { refresh: false });

  // A new stack, and no template yet: `stack init`.
  rmSync(join(settings.workDir, "new-stack-template.json"));
  await whileHung(() => timesOut(driver.up("new", program, { refresh: false }), "stack init"));
  assert.ok(warnings.some((line) => line.includes("pulumi stack init passed its deadline")), "the log says which command hung");
  // The warm-up at a start makes the template by `stack init` of a stack of its own: it gives up
  // at the deadline, and the operator goes on.
  await whileHung(() => driver.warmUp());
  assert.ok(warnings.some((line) => line.includes("could not make the template of new stacks ahead of time") && line.includes("deadline")));
  assert.deepEqual(enginesOf(), []);

  // A stack an interrupted update left with pending operations: `stack export` first, in a
  // driver that has not seen the stack yet (a restarted operator).
  const file = JSON.parse(readFileSync(checkpoint("existing"), "utf8")) as { checkpoint: { latest: { pending_operations?: unknown[]; resources: { urn: string; type: string }[] } } };
  const stackResource = file.checkpoint.latest.resources.find((r) => r.type === "pulumi:pulumi:Stack")!;
  file.checkpoint.latest.pending_operations = [{ resource: stackResource, type: "updating" }];
  writeFileSync(checkpoint("existing"), JSON.stringify(file));
  const restarted = new StackDriver(settings, log);
  await whileHung(() => timesOut(restarted.up("existing", program, { refresh: false }), "stack export"));
  await whileHung(() => timesOut(restarted.destroy("existing"), "stack export"));

  // The backend answers again: the same drivers converge without help.
  await driver.up("new", program, { refresh: false });
  await restarted.up("existing", program, { refresh: false });
  const cleared = JSON.parse(readFileSync(checkpoint("existing"), "utf8")) as { checkpoint: { latest: { pending_operations?: unknown[] } } };
  assert.deepEqual(cleared.checkpoint.latest.pending_operations ?? [], []);

  // `stack rm --force`: a stack forgotten while its namespace goes.
  await whileHung(() => timesOut(driver.forget("new"), "stack rm"));
  await driver.forget("new");
  assert.equal(await driver.exists("new"), false);
  await restarted.destroy("existing");
});

test("with a backend other than files that never answers, stack ls (whether a stack exists) ends at the deadline", { timeout: 60_000 }, async () => {
  // A Pulumi Cloud URL on loopback whose server takes connections and never says a word.
  const connections = new Set<Socket>();
  const server = createServer((socket) => connections.add(socket));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  process.env["PULUMI_ACCESS_TOKEN"] = "pul-appstack-hung-backend-test";
  try {
    const driver = new StackDriver({ ...settings, backendUrl: url, workDir: await prepareWorkDir(join(dir, "cloud-work"), new StateIo(deadlineMs)) }, log);
    await timesOut(driver.exists("any"), "stack ls");
    assert.ok(connections.size > 0, "the CLI never reached the backend: the test proves nothing");
  } finally {
    delete process.env["PULUMI_ACCESS_TOKEN"];
    for (const socket of connections) socket.destroy();
    server.close();
  }
});
