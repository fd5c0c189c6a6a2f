// The `appstack` command: wiring only. Each verb lives with the code it drives; commands.ts lists them.
import "./preload.ts";
import { appstackUsage, commands, usageOf } from "./commands.ts";
import { UsageError } from "./flags.ts";

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "help" || command === "--help") {
    console.error(rest[0] && command === "help" ? usageOf(rest[0]) : appstackUsage);
    return;
  }
  const verb = commands[command];
  if (!verb) throw new UsageError(`unknown command ${JSON.stringify(command)}\n${appstackUsage}`);
  // A verb's own --help is its usage text; a program it passes on to answers its own.
  if (!verb.passesOn && rest.includes("--help")) {
    console.error(usageOf(command));
    return;
  }
  const code = await verb.run(rest);
  if (typeof code === "number") process.exitCode = code;
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
