// Prometheus's own reading of a rule file: toolchain/rule-check, a main of ours on Prometheus's
// rule-file parser (model/rulefmt, which parses each expression and template too) and PromQL parser,
// at the pinned github.com/prometheus/prometheus. Built into the cache on first use, for the test
// that needs it only (tools.ts's testTools): neither `npm run toolchain` nor `npm start` builds it.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import yaml from "js-yaml";
import { buildTool } from "../../toolchain/build.ts";
import { toolBinary, toolByName } from "../../toolchain/tools.ts";

export interface RuleReading {
  readonly group: string;
  readonly name: string;
  /** The metric names of the rule's selectors. */
  readonly metrics: readonly string[];
  /** Selectors that name no metric (`{job="x"}`), which no one can check against the registrations. */
  readonly unnamed: number;
}

export interface RuleCheck {
  /** Prometheus's errors, as `promtool check rules` prints them; none for a good file. */
  readonly errors: readonly string[];
  readonly rules: readonly RuleReading[];
}

/** The checker's binary, built first if it is not in the cache yet (cold: the Go module proxy and a compile). */
export function ruleChecker(log: (line: string) => void = (line) => console.error(line)): string {
  const tool = toolByName("rule-check");
  if (!existsSync(toolBinary(tool))) buildTool(tool, log);
  return toolBinary(tool);
}

/** Checks `file` (a rule file's content: `{groups: [...]}`, a PrometheusRule's spec) as Prometheus reads it. */
export function checkRules(file: object): RuleCheck {
  const folder = mkdtempSync(join(tmpdir(), "rule-check-"));
  try {
    const path = join(folder, "rules.yaml");
    writeFileSync(path, yaml.dump(file, { lineWidth: -1 }));
    const result = spawnSync(ruleChecker(), [path], { encoding: "utf8", timeout: 60_000 });
    if (result.status !== 0 && result.status !== 1) throw new Error(`rule-check failed (exit ${result.status}): ${result.stderr}${result.error?.message ?? ""}`);
    return JSON.parse(result.stdout) as RuleCheck;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
