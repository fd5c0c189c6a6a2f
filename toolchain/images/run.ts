// Every external command of an image build, with a deadline: GNU timeout runs it in a process
// group of its own and signals the whole group (buildah and the runc it started) when time is up.
import { spawnSync } from "node:child_process";

export interface RunOptions {
  /** Seconds before the command's process group gets SIGTERM (SIGKILL 30 s later). */
  readonly timeoutSeconds: number;
  readonly cwd?: string;
  /** Show the command's output (long builds) instead of returning it. */
  readonly showOutput?: boolean;
  readonly env?: NodeJS.ProcessEnv;
}

/** The command line that bounds `command args` to `timeoutSeconds`. */
export function boundedCommand(command: string, args: readonly string[], timeoutSeconds: number): [string, string[]] {
  return ["timeout", ["--kill-after=30", `${timeoutSeconds}s`, command, ...args]];
}

/** Runs a command to its end; its standard output when not shown; throws on failure or timeout. */
export function run(command: string, args: readonly string[], options: RunOptions): string {
  const [bounded, boundedArgs] = boundedCommand(command, args, options.timeoutSeconds);
  const result = spawnSync(bounded, boundedArgs, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    // Shown output goes to standard error: standard output is the command's result.
    stdio: options.showOutput ? ["ignore", 2, 2] : ["ignore", "pipe", "pipe"],
    // A backstop in case timeout itself hangs.
    timeout: (options.timeoutSeconds + 60) * 1000,
  });
  const line = `${command} ${args.join(" ")}`;
  if (result.error) throw new Error(`${line}: ${result.error.message}`);
  if (result.status === 124 || result.status === 137) throw new Error(`${line}: no result within ${options.timeoutSeconds} s`);
  if (result.status !== 0) {
    const detail = options.showOutput ? "" : `\n${(result.stderr || result.stdout || "").trim().split("\n").slice(-20).join("\n")}`;
    throw new Error(`${line}: exit code ${result.status ?? result.signal}${detail}`);
  }
  return result.stdout ?? "";
}
