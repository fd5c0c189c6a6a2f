// State-folder calls on files that never answer: named pipes nobody writes, whose open blocks in
// the kernel as a read from a hung NFS mount or a stalled disk does. Each call ends at its deadline
// with the path and the time it hung; the event loop, the rest of libuv's threadpool (other file
// calls, dns.lookup) and the other paths keep working; and the calls that hang never take more
// than two of the pool's four threads.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { lookup } from "node:dns/promises";
import { constants, mkdtempSync, promises as fs, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { StateFolderUnanswered, StateIo, StuckCalls } from "../../operator/pulumi/state-io.ts";
import { eventually } from "../helpers/cluster.ts";

const dir = mkdtempSync(join(tmpdir(), "appstack-state-io-"));
const fifos: string[] = [];
after(async () => {
  // A read left hanging by a failed test would keep this process alive.
  for (const fifo of fifos) await answer(fifo).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});
const deadlineMs = 300;

function hungFile(name: string): string {
  const path = join(dir, name);
  execFileSync("mkfifo", [path]);
  fifos.push(path);
  return path;
}

/** Lets the stuck reads of `fifo` return: a writer comes and goes (never blocking: there is a reader). */
async function answer(fifo: string, content = ""): Promise<void> {
  const writer = await fs.open(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  await writer.write(content);
  await writer.close();
}

/** What a call that ends with StateFolderUnanswered says; fails the test when it ends otherwise. */
async function unanswered(call: Promise<unknown>): Promise<StateFolderUnanswered> {
  const error = await call.then(
    () => assert.fail("the call answered"),
    (error: unknown) => error,
  );
  assert.ok(error instanceof StateFolderUnanswered, String(error));
  return error;
}

/** Ordinary async work of the threadpool still gets a thread. */
async function poolAnswers(): Promise<void> {
  writeFileSync(join(dir, "plain"), "plain");
  assert.equal(await fs.readFile(join(dir, "plain"), "utf8"), "plain");
  assert.ok((await lookup("localhost")).address);
}

test("a read that never answers ends at its deadline; its path is refused at once, other paths work, and it recovers when the read returns", async () => {
  const calls = new StuckCalls();
  const io = new StateIo(deadlineMs, calls);
  const checkpoint = hungFile("checkpoint.json");
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 20);
  const started = performance.now();
  const timedOut = await unanswered(io.readTextIfAny(checkpoint));
  clearInterval(ticker);
  // Timers count from the event loop's cached time, up to a millisecond before `started`.
  assert.ok(performance.now() - started >= deadlineMs - 1);
  // A read on the event loop would have stopped it for good: one tick proves it turned. (How many
  // is up to the machine: a busy one runs fewer than 300 / 20.)
  assert.ok(ticks >= 1, `the event loop stood still while the read hung (${ticks} ticks)`);
  assert.match(timedOut.message, new RegExp(`reading ${checkpoint} did not finish within its deadline of 0.3 s`));
  assert.equal(timedOut.stuck.path, checkpoint);

  // The same path again: refused without a thread, naming the call that hangs and since when.
  const refused = await unanswered(io.readText(checkpoint));
  assert.match(refused.message, new RegExp(`reading ${checkpoint} has not returned since ${timedOut.stuck.since.toISOString()}`));
  // Other paths of the folder, one at a time while something is stuck.
  const other = join(dir, "other.json");
  await io.write(other, "{}");
  assert.equal(await io.readText(other), "{}");
  await poolAnswers();

  // The stuck read returns: its path is tried again.
  await answer(checkpoint, '{"late":true}');
  await fs.rm(checkpoint);
  writeFileSync(checkpoint, '{"now":true}');
  await eventually("the stuck read to return", async () => (calls.current.length ? undefined : true), 10_000);
  assert.equal(await io.readText(checkpoint), '{"now":true}');
});

test("a hung volume takes at most two threads: past two stuck calls every call is refused, and the pool goes on working", async () => {
  const calls = new StuckCalls();
  const io = new StateIo(deadlineMs, calls);
  const volume = ["a", "b", "c", "d", "e"].map((name) => hungFile(`volume-${name}`));
  await unanswered(io.readText(volume[0]!));
  // Two calls at once while one is stuck: the first takes its turn and hangs; the second waits
  // for it (its deadline runs from when it was asked) and never starts, taking no thread. Its
  // deadline is the shorter, so that it provably ends while the first still hangs (with equal
  // deadlines, which timer fires first is up to a busy machine).
  const impatient = new StateIo(deadlineMs / 3, calls);
  const [second, third] = await Promise.all([unanswered(io.readText(volume[1]!)), unanswered(impatient.readText(volume[2]!))]);
  assert.match(second.message, /did not finish within its deadline/);
  assert.match(third.message, new RegExp(`reading ${volume[2]} waited its deadline of 0.1 s for the call before it, while reading ${volume[0]} is stuck since`));
  assert.equal(calls.current.length, 2);
  assert.match((await unanswered(io.readText(volume[2]!))).message, new RegExp(`2 calls are stuck, the oldest reading ${volume[0]} since .*; no state-folder call is made until one returns`));
  for (const fifo of volume.slice(3)) assert.match((await unanswered(io.readText(fifo))).message, /2 calls are stuck/);
  assert.match((await unanswered(io.readText(join(dir, "anything-else")))).message, /2 calls are stuck/);
  await poolAnswers();

  // One of them returns: calls are made again.
  await answer(volume[0]!);
  await eventually("a stuck read to return", async () => (calls.current.length > 1 ? undefined : true), 10_000);
  assert.equal(await io.readTextIfAny(join(dir, "absent")), undefined);
  await answer(volume[1]!);
  await eventually("the other stuck read to return", async () => (calls.current.length ? undefined : true), 10_000);
});
