// The command line reference of docs/command-line.md, generated from commands.ts: every verb with
// the flags it parses, its exit codes (its usage text's "Exit code" sentence, else what cli.ts
// does with a verb that returns or throws) and its usage text, the one it prints with --help or a
// wrong command line. test/unit/command-reference.test.ts fails when the page's reference is not
// this one; `node --import tsx operator/cmd/command-reference.ts --write` writes it.
import { operatorOptions } from "../manager/config.ts";
import { commands, usageOf, type Command } from "./commands.ts";
import { blockText, generatedBlock, markdownTable, runAsWriter, writeBlock } from "./generated-blocks.ts";
import { kubeOptions } from "./kube-flags.ts";

export const commandsPage = "docs/command-line.md";

/** What cli.ts does with a verb that states no exit codes: 0 when it returns, 1 when it throws. */
export const defaultExitCodes = "0: done; 1: an error or a wrong command line";

const code = (text: string) => `\`${text}\``;

/** A flag as it is typed: `--name` and its short form. */
function flagText(name: string, option: { readonly short?: string }): string {
  return option.short ? `${code(`--${name}`)} (${code(`-${option.short}`)})` : code(`--${name}`);
}

/** The flags a verb takes, the operator's and kubectl's named as groups. */
export function flagsCell(command: Command): string {
  const flags = command.flags ?? {};
  const names = Object.keys(flags).filter((name) => !command.refuses?.includes(name));
  if (!names.length) return "-";
  const operators = Object.keys(operatorOptions).every((name) => names.includes(name));
  const own = names.filter((name) => !(operators && name in operatorOptions));
  const kube = own.filter((name) => name in kubeOptions && flags[name] === kubeOptions[name as keyof typeof kubeOptions]);
  const parts = own.filter((name) => !kube.includes(name)).map((name) => flagText(name, flags[name]!));
  if (kube.length) parts.push(`kubectl's: ${kube.map((name) => flagText(name, flags[name]!)).join(", ")}`);
  if (operators) parts.push("the operator's flags ([`appstack operator`](#appstack-operator))");
  return parts.join(", ");
}

/** Its exit codes, as its usage text states them, else cli.ts's. */
export function exitCodes(verb: string): string {
  const command = commands[verb]!;
  if (command.passesOn) return `${command.passesOn}'s own`;
  const stated = /Exit code ([\s\S]*?\.)(?:\n|$)/.exec(command.usage ?? "")?.[1];
  return stated ? stated.replace(/\s+/g, " ").replace(/\.$/, "") : defaultExitCodes;
}

/** GitHub's anchor of a heading. */
const anchorOf = (heading: string) => heading.toLowerCase().replace(/[^\w\- ]/g, "").replace(/ /g, "-");

/** The verbs grouped by the usage text they print (status and get print one), in commands.ts's order. */
function sections(): { verbs: string[]; usage: string; heading: string }[] {
  const byUsage = new Map<string, string[]>();
  for (const verb of Object.keys(commands)) byUsage.set(usageOf(verb), [...(byUsage.get(usageOf(verb)) ?? []), verb]);
  return [...byUsage].map(([usage, verbs]) => ({ verbs, usage, heading: verbs.map((verb) => code(`appstack ${verb}`)).join(", ") }));
}

/** The reference, as Markdown: a table of every verb, then each verb's usage text. */
export function commandReference(): string {
  const all = sections();
  const rows = all.flatMap(({ verbs, heading }) => verbs.map((verb) => [`[${code(`appstack ${verb}`)}](#${anchorOf(heading)})`, flagsCell(commands[verb]!), exitCodes(verb)]));
  return [
    markdownTable(["command", "flags", "exit codes"], rows),
    ...all.flatMap(({ usage, heading }) => ["", `### ${heading}`, "", "```text", usage, "```"]),
  ].join("\n");
}

export const commandsBlock = generatedBlock("command line reference", "command-reference.ts", commandsPage, commandReference);

/** The page's text between the markers, or undefined without them. */
export const pageCommands = (page: string): string | undefined => blockText(page, commandsBlock);

if (runAsWriter("command-reference.ts")) writeBlock(commandsBlock);
