// Flags through node:util parseArgs in strict mode: an unknown flag, a flag without its value or a
// stray argument is an error that shows the command's usage; nothing is silently ignored.
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";

/** The command line is wrong: the message says how, then how to call the command. */
export class UsageError extends Error {}

export function parseFlags<const Options extends ParseArgsOptionsConfig>(argv: readonly string[], options: Options, usage: string) {
  return parseCommandLine(argv, options, usage, false).values;
}

/** Flags and the arguments between them (`history app/web -n team`). */
export function parseCommandLine<const Options extends ParseArgsOptionsConfig>(argv: readonly string[], options: Options, usage: string, allowPositionals = true) {
  try {
    return parseArgs({ args: [...argv], options, strict: true, allowPositionals });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string" && code.startsWith("ERR_PARSE_ARGS")) throw new UsageError(`${(error as Error).message}\n${usage}`);
    throw error;
  }
}
