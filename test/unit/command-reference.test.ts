// The command line reference (docs/command-line.md) is generated from operator/cmd/commands.ts,
// the table cli.ts dispatches through, and the usage texts agree with the flags each command
// parses. Each test fails when a verb, a flag or an exit code is added in the code without its
// place in the usage text or the page.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot } from "../../toolchain/tools.ts";
import { appstackUsage, commands, usageEntries, usageOf } from "../../operator/cmd/commands.ts";
import { commandReference, commandsBlock, commandsPage, exitCodes, pageCommands } from "../../operator/cmd/command-reference.ts";
import { needsPersonExitCode } from "../../operator/cmd/status-cli.ts";

const source = (path: string) => readFileSync(join(repoRoot, path), "utf8");

test(`${commandsPage}'s command line reference is the one generated from the commands`, () => {
  const page = pageCommands(source(commandsPage));
  assert.ok(page !== undefined, `${commandsPage} has the generated block's markers (${commandsBlock.beginMarker})`);
  assert.equal(page, commandReference(), "regenerate it: node --import tsx operator/cmd/command-reference.ts --write");
});

test("every verb cli.ts runs has its entry in `appstack help`, and every entry is a verb", () => {
  const entries = [...usageEntries().keys()].sort();
  assert.ok(entries.length > 15, `only ${entries.length} entries found: the parse does not read the usage text`);
  assert.deepEqual(entries, Object.keys(commands).sort());
});

test("every flag a command parses is named in the usage text it prints", () => {
  const missing = Object.entries(commands).flatMap(([verb, command]) =>
    Object.entries(command.flags ?? {})
      .filter(([name]) => !command.refuses?.includes(name))
      .filter(([name, option]) => {
        const usage = usageOf(verb);
        const named = new RegExp(String.raw`--${name}\b`).test(usage);
        const short = option.short !== undefined && new RegExp(String.raw`(^|[\s\[])-${option.short}\b`).test(usage);
        return !named && !short;
      })
      .map(([name]) => `appstack ${verb} --${name}`),
  );
  assert.deepEqual(missing, []);
});

test("a flag refused is one the command parses, so that it can say why", () => {
  for (const [verb, command] of Object.entries(commands)) {
    for (const name of command.refuses ?? []) assert.ok(name in (command.flags ?? {}), `appstack ${verb} --${name}`);
  }
});

test("the exit codes the reference states are the codes the commands return", () => {
  assert.match(exitCodes("status"), new RegExp(`\\b${needsPersonExitCode}: something does`));
  assert.match(exitCodes("reconcile"), new RegExp(`\\b${needsPersonExitCode}: handled, and a plan waits`));
  assert.match(source("operator/cmd/preview-cli.ts"), /return .*\? 2 : 0/, "preview returns 2 for changes");
  assert.match(exitCodes("preview"), /2: changes/);
  assert.ok(appstackUsage.includes("exit 3 when one needs a person"), "appstack help says status's code");
});
