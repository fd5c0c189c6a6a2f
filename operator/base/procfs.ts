// Linux's /proc, read the one way every caller needs: the process ids, a process's stat fields and
// its command line. A read answers undefined where the process is gone meanwhile or not ours to read.
import { readdirSync, readFileSync } from "node:fs";

/** The ids of the processes in /proc now. */
export function processIds(): number[] {
  return readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).map(Number);
}

export interface ProcessStat {
  /** The command name (comm), without its parentheses. */
  readonly command: string;
  /** The fields after the command name, as proc(5) numbers them from 3: state first, then the parent's pid. */
  readonly fields: readonly string[];
}

/** `pid`'s /proc/<pid>/stat; the command name may hold spaces and parentheses, so it ends at the last ")". */
export function processStat(pid: number): ProcessStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = text.lastIndexOf(")");
    return { command: text.slice(text.indexOf("(") + 1, close), fields: text.slice(close + 2).split(" ") };
  } catch {
    return undefined;
  }
}

/** `pid`'s command line, split at its NUL bytes (the last element is the empty string after the final NUL). */
export function commandLine(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  } catch {
    return undefined;
  }
}
