// The `appstack` command: wiring only. Each verb lives with the code it drives; commands.ts lists them.
// The kinds folder (--kinds, APPSTACK_KINDS_DIR) is loaded first: the verbs' usage texts are derived
// from the kinds, so commands.ts is imported only once they are registered.
import "./preload.ts";
import { UsageError } from "./flags.ts";
import { loadKindsOption } from "./kinds-option.ts";

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  await loadKindsOption(command, rest);
  const { appstackUsage, commands, usageOf } = await import("./commands.ts");
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
