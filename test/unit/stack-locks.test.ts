// Stale stack locks in a file backend laid out as Pulumi lays it out: which are broken, which stay,
// and when another replica's pod proves its engines gone.
import type { V1ContainerStatus, V1Pod } from "@kubernetes/client-node";
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { createLogger } from "../../operator/base/log.ts";
import { podVerdict } from "../../operator/kube/peer-pods.ts";
import type { HolderCheck } from "../../operator/base/lock-holders.ts";
import { processStat } from "../../operator/base/procfs.ts";
import { breakAllStaleLocks, breakLocksOfEarlierContainers, breakStaleLocks } from "../../operator/pulumi/stack-locks.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";
import { eventually } from "../helpers/cluster.ts";

const backend = mkdtempSync(join(tmpdir(), "appstack-locks-"));
after(() => rmSync(backend, { recursive: true, force: true }));
const backendUrl = pathToFileURL(backend).href;
const warnings: string[] = [];
const log = createLogger({ level: "warn", write: (line) => warnings.push(line) });
const io = new StateIo(60_000);

/** A pid no process has: beyond the kernel's default pid_max. */
const deadPid = 4_194_304 + 1;

function lock(project: string, stack: string, holder: { pid: number; hostname: string }, taken = new Date(), root = backend): string {
  const folder = join(root, ".pulumi", "locks", "organization", project, stack);
  mkdirSync(folder, { recursive: true });
  const file = join(folder, `${stack}-lock.json`);
  writeFileSync(file, JSON.stringify({ ...holder, username: "test", timestamp: taken.toISOString() }));
  writeFileSync(`${file}.attrs`, "{}");
  return file;
}

test("a sweep breaks the project's locks whose holder is gone, and keeps live ones, other hosts' and other projects'", async () => {
  const dead = lock("appstack", "app.default.killed", { pid: deadPid, hostname: hostname() });
  const foreign = lock("appstack", "app.default.moved", { pid: process.pid, hostname: "an-old-pod" });
  const live = lock("appstack", "app.default.running", { pid: process.pid, hostname: hostname() });
  const other = lock("someone-else", "app.default.killed", { pid: deadPid, hostname: hostname() });

  assert.equal(await breakAllStaleLocks(backendUrl, "appstack", log, io), 1);
  assert.ok(!existsSync(dead) && !existsSync(`${dead}.attrs`), "a dead holder's lock is broken");
  assert.ok(existsSync(foreign), "another host's lock stays when nothing proves its holder gone: it may be a frozen leader's");
  assert.ok(existsSync(live) && existsSync(`${live}.attrs`), "a live holder's lock stays");
  assert.ok(existsSync(other), "another project's lock stays");
  assert.equal(warnings.length, 1, "one warning per broken lock, none for its attributes file");

  const running = await breakStaleLocks(backendUrl, "appstack", "app.default.running", log, io);
  assert.equal(running.removed, false);
  assert.match(running.held ?? "", new RegExp(`pid ${process.pid} on ${hostname()} since .*: its process still runs on this host`));
  assert.match((await breakStaleLocks(backendUrl, "appstack", "app.default.moved", log, io)).held ?? "", /on an-old-pod since .*: it was taken on another host, and nothing here can prove/);
  assert.equal(await breakAllStaleLocks(backendUrl, "appstack", log, io), 0, "a second sweep finds nothing");
  assert.equal(await breakAllStaleLocks("s3://bucket", "appstack", log, io), 0, "only file backends have lock files to look at");
});

test("another host's lock is broken only when the holder check proves that host's engine gone", async () => {
  const asked: Array<[string, number | undefined]> = [];
  const taken = new Date("2026-11-23T10:00:00Z");
  const frozen = lock("appstack", "app.default.frozen", { pid: 7, hostname: "appstack-old" }, taken);
  const stillThere: HolderCheck = (host, takenAtMs) => (asked.push([host, takenAtMs]), Promise.resolve({ gone: false, why: "pod appstack-old still runs" }));
  const sweep = await breakStaleLocks(backendUrl, "appstack", "app.default.frozen", log, io, stillThere);
  assert.deepEqual(sweep, { removed: false, held: `pid 7 on appstack-old since ${taken.toISOString()}: pod appstack-old still runs` });
  assert.deepEqual(asked, [["appstack-old", taken.getTime()]]);
  assert.ok(existsSync(frozen));

  const gone: HolderCheck = () => Promise.resolve({ gone: true, why: "pod appstack-old no longer exists" });
  // This one and the first test's an-old-pod lock.
  assert.equal(await breakAllStaleLocks(backendUrl, "appstack", log, io, gone), 2);
  assert.ok(!existsSync(frozen) && !existsSync(`${frozen}.attrs`));
  assert.match(warnings.at(-1) ?? "", /pod appstack-old no longer exists/);
});

test("a lock whose pid now belongs to a process started after the lock was taken is stale (pids wrap)", async () => {
  // This test process is alive, but started long after a lock taken a day ago.
  const reused = lock("appstack", "app.default.reused", { pid: process.pid, hostname: hostname() }, new Date(Date.now() - 86_400_000));
  assert.equal((await breakStaleLocks(backendUrl, "appstack", "app.default.reused", log, io)).removed, true);
  assert.ok(!existsSync(reused));
});

test("a lock whose holder has exited but is not reaped yet (a zombie) is stale; its parent's is not", async () => {
  // A parent that never reaps its child: the child stays a zombie for as long as the parent lives,
  // as a killed engine does until init reaps it (about a second here, after its operator was killed).
  const parent = spawn("python3", ["-c", "import os, sys, time\npid = os.fork()\nif pid == 0: os._exit(0)\nprint(pid, flush=True)\ntime.sleep(60)"], { stdio: ["ignore", "pipe", "inherit"] });
  after(() => parent.kill("SIGKILL"));
  const [line] = (await once(parent.stdout, "data")) as [Buffer];
  const zombie = Number(line.toString().trim());
  await eventually("the child to be a zombie", async () => (processStat(zombie)?.fields[0] === "Z" ? true : undefined), 10_000);
  const exited = lock("appstack", "app.default.exited", { pid: zombie, hostname: hostname() });
  const running = lock("appstack", "app.default.parent", { pid: parent.pid!, hostname: hostname() });
  assert.equal((await breakStaleLocks(backendUrl, "appstack", "app.default.exited", log, io)).removed, true);
  assert.ok(!existsSync(exited), "a zombie holds no lock");
  assert.match((await breakStaleLocks(backendUrl, "appstack", "app.default.parent", log, io)).held ?? "", /its process still runs on this host/);
  assert.ok(existsSync(running));
});

/** Whether this process may run another as another user: root, with setpriv. */
const canSwitchUser = process.getuid?.() === 0 && (() => {
  try {
    execFileSync("setpriv", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

test("a lock held by a live process of another user is kept: only ESRCH proves a process gone, not EPERM", { skip: !canSwitchUser && "needs root and setpriv to sweep as another user" }, () => {
  // The sweep runs as nobody; the holder is this test process, root's: a person's `appstack pulumi`
  // as seen from an operator running as another user. Probing it with signal 0 fails with EPERM.
  const shared = mkdtempSync(join(tmpdir(), "appstack-locks-users-"));
  after(() => rmSync(shared, { recursive: true, force: true }));
  const folder = join(shared, ".pulumi", "locks", "organization", "appstack", "app.default.person");
  mkdirSync(folder, { recursive: true });
  const file = join(folder, "person-lock.json");
  writeFileSync(file, JSON.stringify({ pid: process.pid, hostname: hostname(), username: "root", timestamp: new Date().toISOString() }));
  writeFileSync(`${file}.attrs`, "{}");
  // The sweeping user owns the state folder, as an operator sharing it does: only the verdict keeps the lock.
  execFileSync("chown", ["-R", "65534:65534", shared]);
  const module = (path: string) => JSON.stringify(new URL(path, import.meta.url).href);
  const sweep = `import(${module("../../operator/pulumi/stack-locks.ts")}).then(async ({ breakStaleLocks }) => {
    const { createLogger } = await import(${module("../../operator/base/log.ts")});
    const { StateIo } = await import(${module("../../operator/pulumi/state-io.ts")});
    try { process.kill(Number(process.env.HOLDER), 0); } catch (error) { console.error("probe:", error.code); }
    console.log(JSON.stringify(await breakStaleLocks(process.env.BACKEND, "appstack", "app.default.person", createLogger({ level: "warn", write: console.error }), new StateIo(60_000))));
  })`;
  const child = spawnSync("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, "--import", "tsx", "-e", sweep], {
    env: { ...process.env, HOME: shared, BACKEND: pathToFileURL(shared).href, HOLDER: String(process.pid) },
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(child.status, 0, child.stderr);
  assert.match(child.stderr, /probe: EPERM/, "the sweep ran as a user that may not signal the holder");
  assert.deepEqual(readdirSync(folder).sort(), ["person-lock.json", "person-lock.json.attrs"], `the live holder's lock was broken: ${child.stderr}`);
  const result = JSON.parse(child.stdout) as { removed: boolean; held?: string };
  assert.equal(result.removed, false);
  assert.match(result.held ?? "", new RegExp(`pid ${process.pid} on ${hostname()} since .*: its process still runs on this host`));
});

const operatorContainer = (state: V1ContainerStatus["state"], restartCount = 0): V1ContainerStatus => ({ name: "operator", image: "x", imageID: "", ready: true, restartCount, ...(state ? { state } : {}) });

test("a replica's pod proves its engines gone when it no longer exists, has never run, has ended, or its containers started again since the lock", () => {
  const taken = Date.parse("2026-11-23T10:00:00Z");
  const pod = (created: string, phase: string, containers: V1ContainerStatus[], nodeName = "node-1"): V1Pod => ({ metadata: { name: "appstack-a", creationTimestamp: new Date(created) }, spec: { containers: [], ...(nodeName ? { nodeName } : {}) }, status: { phase, containerStatuses: containers } });
  const running = (since: string): V1ContainerStatus => operatorContainer({ running: { startedAt: new Date(since) } });
  const before = "2026-11-23T09:00:00Z";
  const cases: Array<[string, V1Pod | undefined, number | undefined, boolean]> = [
    ["no pod", undefined, taken, true],
    ["a newer pod of that name whose container started after the lock", pod("2026-11-23T10:05:00Z", "Running", [running("2026-11-23T10:05:01Z")]), taken, true],
    ["a newer pod of that name not yet on a node", pod("2026-11-23T10:05:00Z", "Pending", [], ""), taken, true],
    ["an ended pod", pod(before, "Failed", []), taken, true],
    ["a container that started again after the lock", pod(before, "Running", [running("2026-11-23T10:00:01Z")]), taken, true],
    ["a container waiting to start again", pod(before, "Running", [operatorContainer({ waiting: { reason: "CrashLoopBackOff" } }, 1)]), taken, true],
    ["a container running since before the lock (frozen or cut off)", pod(before, "Running", [running(before)]), taken, false],
    ["a container running since the lock's second", pod(before, "Running", [running("2026-11-23T10:00:00Z")]), taken, false],
    ["a pod on a lost node (phase Unknown, statuses as last seen)", pod(before, "Unknown", [running(before)]), taken, false],
    ["a pod being deleted that still runs", { ...pod(before, "Running", [running(before)]), metadata: { name: "appstack-a", creationTimestamp: new Date(before), deletionTimestamp: new Date() } }, taken, false],
    ["a pod on a node with no container statuses yet", pod(before, "Pending", []), taken, false],
    ["a lock with no time, container running", pod(before, "Running", [running(before)]), undefined, false],
  ];
  for (const [what, subject, takenAt, gone] of cases) assert.equal(podVerdict("default/appstack-a", subject, takenAt).gone, gone, what);
  assert.match(podVerdict("default/appstack-a", pod(before, "Running", [running(before)]), taken).why, /pod default\/appstack-a still runs \(since 2026-11-23T09:00:00.000Z\), so its engine may still write the stack/);
});

test("a live leader on a node whose clock is behind the API server's keeps its first lock: only facts of one clock are compared", () => {
  // Real time 10:00:00: the API server creates the pod. The node's clock is a minute behind.
  const nodeBehindMs = 60_000;
  const real = (time: string) => Date.parse(`2026-11-23T${time}Z`);
  const byNode = (time: string) => new Date(real(time) - nodeBehindMs);
  const live: V1Pod = {
    metadata: { name: "appstack-a", uid: "5f0c", creationTimestamp: new Date(real("10:00:00")) },
    spec: { nodeName: "node-1", containers: [] },
    // The kubelet reports the container's start by the node's clock, as the engine stamps its lock.
    status: { phase: "Running", containerStatuses: [operatorContainer({ running: { startedAt: byNode("10:00:02") } })] },
  };
  // The leader's engine takes its first lock at 10:00:10, 09:59:10 by the node's clock: before the pod's creationTimestamp.
  const verdict = podVerdict("default/appstack-a", live, byNode("10:00:10").getTime());
  assert.equal(verdict.gone, false, `a live leader's lock was judged gone: ${verdict.why}`);
  assert.match(verdict.why, /still runs/);
});

test("a replica starting in a pod of a name breaks every lock of that name: each predates its container, whatever the clocks say", async () => {
  const shared = mkdtempSync(join(tmpdir(), "appstack-locks-restart-"));
  after(() => rmSync(shared, { recursive: true, force: true }));
  // Taken by the previous pod of this name on a node whose clock was an hour ahead, by a pid this
  // machine runs now (this test's), and by another replica, which stays.
  const predecessor = lock("appstack", "app.default.before", { pid: process.pid, hostname: hostname() }, new Date(Date.now() + 3_600_000), shared);
  const peer = lock("appstack", "app.default.peer", { pid: process.pid, hostname: "appstack-b" }, new Date(), shared);
  const otherProject = lock("someone-else", "app.default.before", { pid: process.pid, hostname: hostname() }, new Date(), shared);
  const before = warnings.length;
  assert.equal(await breakLocksOfEarlierContainers(pathToFileURL(shared).href, "appstack", log, io), 1);
  assert.ok(!existsSync(predecessor) && !existsSync(`${predecessor}.attrs`), "the predecessor's lock was kept");
  assert.ok(existsSync(peer) && existsSync(otherProject));
  assert.match(warnings.slice(before).join("\n"), /breaking a stack lock of an earlier container of this pod's name.*app\.default\.before/);
});
