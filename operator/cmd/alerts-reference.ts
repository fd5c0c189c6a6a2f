// The table of alerts on docs/runbook.md, generated from the rules the install ships
// (components/prometheus-rule.ts): each alert with its severity, how long its expression must hold,
// what it means and the expression itself, linked to its entry. test/unit/prometheus-rule.test.ts
// fails when the page's table is not this one; `node --import tsx operator/cmd/alerts-reference.ts
// --write` writes it.
import { alertRules, runbookAnchor, runbookPage } from "../../components/prometheus-rule.ts";
import { blockText, generatedBlock, markdownTable, runAsWriter, writeBlock } from "./generated-blocks.ts";

/** The table, as Markdown; `NS` in an expression is the install's namespace. */
export function alertsReference(): string {
  return markdownTable(
    ["alert", "severity", "for", "fires when", "expression"],
    alertRules.map((rule) => [`[${rule.alert}](#${runbookAnchor(rule.alert)})`, rule.severity, `\`${rule.for}\``, rule.meaning, `\`${rule.expr}\``]),
  );
}

export const alertsBlock = generatedBlock("alerts reference", "alerts-reference.ts", runbookPage, alertsReference);

/** The page's text between the markers, or undefined without them. */
export const pageAlerts = (page: string): string | undefined => blockText(page, alertsBlock);

if (runAsWriter("alerts-reference.ts")) writeBlock(alertsBlock);
