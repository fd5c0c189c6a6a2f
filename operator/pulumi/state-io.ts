// The operator's file calls on its state folder: off the event loop, each within a deadline, and
// never able to starve the process. Node runs async file calls on libuv's threadpool
// (UV_THREADPOOL_SIZE, 4 by default), which dns.lookup, crypto and zlib share. A call on a hung
// volume (NFS gone, a stalled disk) or on a file that never answers (a FIFO with no writer) keeps
// its thread until the kernel answers, however long after its deadline; four of them would stop
// every other call of the pool. So a call past its deadline counts as stuck until it returns, and
// while one is stuck:
// - a call on its path (or below it, when it is a folder) is refused at once;
// - other calls run one at a time: the volume may be hung as a whole, and each call that hangs
//   keeps a thread; a single file that hangs leaves every other path working;
// - with `maxStuck` (2) calls stuck, every call is refused at once.
// So a hung state folder keeps at most two threads of the pool (or as many as there were calls
// running at once when it hung). A stuck call that returns takes its part of the refusal back.
import { promises as fs, type Dirent } from "node:fs";
import { sep } from "node:path";
import { timedOut, withinDeadline } from "../base/deadline.ts";

/** A state-folder call that is stuck: what it does, on which path, since when. */
export interface StuckCall {
  readonly what: string;
  readonly path: string;
  readonly since: Date;
}

/**
 * The state folder did not answer: a call passed its deadline, or was refused because an earlier
 * one is still stuck. The message names the path that hung and since when.
 */
export class StateFolderUnanswered extends Error {
  readonly stuck: StuckCall;

  constructor(message: string, stuck: StuckCall) {
    super(message);
    this.stuck = stuck;
  }
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/** Whether `path` is the stuck call's path or lies below it. */
const within = (path: string, stuck: StuckCall) => path === stuck.path || path.startsWith(stuck.path + sep);

/** The process's record of stuck calls; one per process, as libuv's threadpool is. */
export class StuckCalls {
  private readonly stuck = new Set<StuckCall>();
  /** While a call is stuck, the turn of the last call admitted: the next one waits for it. */
  private turn: Promise<void> = Promise.resolve();
  private readonly maxStuck: number;

  constructor(maxStuck = 2) {
    this.maxStuck = maxStuck;
  }

  /** The calls stuck now, oldest first. */
  get current(): readonly StuckCall[] {
    return [...this.stuck];
  }

  /** Runs `call` (`what` on `path`) within `deadlineMs`, unless a stuck call refuses it. */
  async run<T>(what: string, path: string, deadlineMs: number, call: () => Promise<T>): Promise<T> {
    this.refuse(path);
    if (!this.stuck.size) return this.attempt(what, path, deadlineMs, deadlineMs, call);
    // Wall time for the message, monotonic time for the deadline.
    const waitedSince = new Date();
    const waitedFrom = performance.now();
    const previous = this.turn;
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    this.turn = previous.then(() => mine);
    try {
      if ((await withinDeadline(previous, deadlineMs)) === timedOut) {
        const oldest = this.current[0] ?? { what, path, since: waitedSince };
        throw new StateFolderUnanswered(`the state folder does not answer: ${what} ${path} waited its deadline of ${seconds(deadlineMs)} for the call before it, while ${oldest.what} ${oldest.path} is stuck since ${oldest.since.toISOString()}`, oldest);
      }
      this.refuse(path);
      return await this.attempt(what, path, deadlineMs - (performance.now() - waitedFrom), deadlineMs, call);
    } finally {
      done();
    }
  }

  /** Throws when `path` is stuck, or when too many calls are. */
  private refuse(path: string): void {
    const calls = this.current;
    const same = calls.find((stuck) => within(path, stuck));
    if (same) throw new StateFolderUnanswered(`the state folder does not answer: ${same.what} ${same.path} has not returned since ${same.since.toISOString()}; it is not tried again until that call returns`, same);
    const oldest = calls[0];
    if (oldest && calls.length >= this.maxStuck) {
      throw new StateFolderUnanswered(`the state folder does not answer: ${calls.length} calls are stuck, the oldest ${oldest.what} ${oldest.path} since ${oldest.since.toISOString()}; no state-folder call is made until one returns`, oldest);
    }
  }

  private async attempt<T>(what: string, path: string, leftMs: number, deadlineMs: number, call: () => Promise<T>): Promise<T> {
    const since = new Date();
    const work = call();
    const result = await withinDeadline(work, Math.max(1, leftMs));
    if (result !== timedOut) return result;
    const stuck = { what, path, since };
    this.stuck.add(stuck);
    const returned = () => void this.stuck.delete(stuck);
    work.then(returned, returned);
    throw new StateFolderUnanswered(`the state folder does not answer: ${what} ${path} did not finish within its deadline of ${seconds(deadlineMs)}`, stuck);
  }
}

/** Every StateIo of this process shares it: the threadpool a stuck call keeps is the process's. */
export const processStuckCalls = new StuckCalls();

const isMissing = (error: unknown) => ["ENOENT", "ENOTDIR"].includes((error as { code?: string }).code ?? "");

/** State-folder file calls, each within `deadlineMs`; they throw StateFolderUnanswered past it. */
export class StateIo {
  readonly deadlineMs: number;
  private readonly calls: StuckCalls;

  constructor(deadlineMs: number, calls: StuckCalls = processStuckCalls) {
    this.deadlineMs = deadlineMs;
    this.calls = calls;
  }

  private run<T>(what: string, path: string, call: () => Promise<T>): Promise<T> {
    return this.calls.run(what, path, this.deadlineMs, call);
  }

  readText(path: string): Promise<string> {
    return this.run("reading", path, () => fs.readFile(path, "utf8"));
  }

  /** The file's text; undefined when there is no such file. One call: no check before the read. */
  readTextIfAny(path: string): Promise<string | undefined> {
    return this.run("reading", path, async () => {
      try {
        return await fs.readFile(path, "utf8");
      } catch (error) {
        if (isMissing(error)) return undefined;
        throw error;
      }
    });
  }

  readBytes(path: string): Promise<Buffer> {
    return this.run("reading", path, () => fs.readFile(path));
  }

  /** As existsSync: false for any error of the file system (a deadline still throws). */
  exists(path: string): Promise<boolean> {
    return this.run("looking up", path, () => fs.access(path).then(() => true, () => false));
  }

  /** Whether `path` is a regular file; false when it is anything else or absent. */
  isFile(path: string): Promise<boolean> {
    return this.run("looking up", path, () => fs.stat(path).then((stat) => stat.isFile(), () => false));
  }

  /** Where a symbolic link points; undefined when `path` is no link or absent. */
  readLink(path: string): Promise<string | undefined> {
    return this.run("reading the link", path, () => fs.readlink(path).catch(() => undefined));
  }

  list(path: string): Promise<string[]> {
    return this.run("listing", path, () => fs.readdir(path));
  }

  listEntries(path: string): Promise<Dirent[]> {
    return this.run("listing", path, () => fs.readdir(path, { withFileTypes: true }));
  }

  write(path: string, content: string, mode?: number): Promise<void> {
    return this.run("writing", path, () => fs.writeFile(path, content, mode === undefined ? {} : { mode }));
  }

  rename(from: string, to: string): Promise<void> {
    return this.run("renaming", from, () => fs.rename(from, to));
  }

  /** rm -f (-r with `recursive`): nothing there is no error. */
  remove(path: string, recursive = false): Promise<void> {
    return this.run("removing", path, () => fs.rm(path, { force: true, recursive }));
  }

  makeFolder(path: string): Promise<void> {
    return this.run("creating the folder", path, () => fs.mkdir(path, { recursive: true }).then(() => undefined));
  }

  symlink(target: string, path: string): Promise<void> {
    return this.run("linking", path, () => fs.symlink(target, path));
  }
}
