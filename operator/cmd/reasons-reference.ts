// The condition reasons table of docs/api.md, generated from operator/controller/reasons.ts, the
// list the phases take their reasons from: for each reason, the conditions it comes with (worked
// out by conditions.ts from the phases that give it), when it is given and what to do; and the
// table of the reasons of Events alone, from the same file.
// test/unit/reasons-reference.test.ts fails when the page's tables are not these;
// `node --import tsx operator/cmd/reasons-reference.ts --write` writes it.
import { conditionsFor, type Phase } from "../controller/conditions.ts";
import { conditionReasons, eventReasons, type ConditionReason, type ReasonEntry, type ReasonPhase } from "../controller/reasons.ts";
import { blockText, generatedBlock, markdownTable, runAsWriter, writeBlock } from "./generated-blocks.ts";

export const reasonsPage = "docs/api.md";

/** The phases of kind `phase` that give `reason`: one, or a suspended object's two (current or not). */
function phasesOf(phase: ReasonPhase, reason: ConditionReason): Phase[] {
  switch (phase) {
    case "progressing":
    case "stalled":
      return [{ kind: phase, reason, message: "" } as Phase];
    case "suspended":
      return [true, false].map((current) => ({ kind: phase, current, message: "" }));
    default:
      return [{ kind: phase, message: "" }];
  }
}

/** The conditions that are True in `phase`, as conditions.ts writes them; Ready=False when none is. */
function trueConditions(phase: Phase): string {
  const on = conditionsFor(phase, 1).filter((condition) => condition.status === "True");
  return on.length ? on.map((condition) => `${condition.type}=True`).join(", ") : "Ready=False";
}

function conditionCell(reason: ConditionReason, entry: ReasonEntry): string {
  return entry.phases.map((phase) => [...new Set(phasesOf(phase, reason).map(trueConditions))].join(" or ")).join(", then ");
}

/** Each reason's row, in the list's order. */
export function reasonRows(): string[][] {
  return Object.entries(conditionReasons).map(([reason, entry]: [string, ReasonEntry]) => [
    conditionCell(reason as ConditionReason, entry),
    `\`${reason}\`${entry.from ? ` (${entry.from}'s)` : ""}`,
    entry.when,
    entry.todo,
  ]);
}

/** The table, as Markdown. */
export function reasonsReference(): string {
  return markdownTable(["condition", "reason", "when", "what to do"], reasonRows());
}

export const reasonsBlock = generatedBlock("condition reasons", "reasons-reference.ts", reasonsPage, reasonsReference);

/** The reasons of Events alone, as Markdown. */
export function eventsReference(): string {
  return markdownTable(["reason", "type", "when"], Object.entries(eventReasons).map(([reason, entry]) => [`\`${reason}\``, entry.type, entry.when]));
}

export const eventsBlock = generatedBlock("event reasons", "reasons-reference.ts", reasonsPage, eventsReference);

/** The page's text between the markers, or undefined without them. */
export const pageReasons = (page: string): string | undefined => blockText(page, reasonsBlock);

if (runAsWriter("reasons-reference.ts")) {
  writeBlock(reasonsBlock);
  writeBlock(eventsBlock);
}
