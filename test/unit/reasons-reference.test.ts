// The condition reasons table (docs/api.md) is generated from operator/controller/reasons.ts, the
// list the phases take their reasons from (conditions.ts types them, so tsc refuses a reason the
// list lacks). These tests fail when the page's table is not the generated one, when a source of
// the controller names a reason, as a literal, that the list lacks, and when the list holds a
// reason nothing gives; and the same for the reasons of Events alone.
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot } from "../../toolchain/tools.ts";
import { conditionReasons, eventReasons, podWaitingReasons } from "../../operator/controller/reasons.ts";
import { eventsBlock, eventsReference, pageReasons, reasonsBlock, reasonsPage, reasonsReference } from "../../operator/cmd/reasons-reference.ts";
import { blockText } from "../../operator/cmd/generated-blocks.ts";

const source = (path: string) => readFileSync(join(repoRoot, path), "utf8");
const listed = new Set(Object.keys(conditionReasons));
const controller = readdirSync(join(repoRoot, "operator/controller"))
  .filter((name) => name.endsWith(".ts") && name !== "reasons.ts")
  .map((name) => ({ path: `operator/controller/${name}`, text: source(`operator/controller/${name}`) }));

test(`${reasonsPage}'s condition reasons table is the one generated from operator/controller/reasons.ts`, () => {
  const page = pageReasons(source(reasonsPage));
  assert.ok(page !== undefined, `${reasonsPage} has the generated block's markers (${reasonsBlock.beginMarker})`);
  assert.equal(page, reasonsReference(), "regenerate it: node --import tsx operator/cmd/reasons-reference.ts --write");
});

test("every reason the controller gives a phase or a reported failure is in the list", () => {
  // Where a reason is chosen: a phase's `reason:` (a literal, or a choice among literals), a
  // failure shown on the object, a reason constant, reporting.ts's choice among failures' reasons.
  const choices = [/reason: [^,}]*/g, /ReportedFailure\("[A-Za-z]+"/g, /Reason = "[A-Za-z]+"/g, /const (?:reason|shown) = [^;]*/g];
  const found = controller.flatMap(({ path, text }) =>
    choices.flatMap((choice) => [...text.matchAll(choice)].flatMap((match) => [...match[0].matchAll(/"([A-Z][A-Za-z]+)"/g)].map((quoted) => ({ path, reason: quoted[1]! })))),
  );
  assert.ok(found.some(({ reason }) => reason === "RepairingDrift"), "the scan reads a choice among literals");
  assert.ok(found.length > 20, `only ${found.length} reasons found: the scan is not reading the sources`);
  assert.deepEqual(found.filter(({ reason }) => !listed.has(reason)), [], "reasons given with no entry in operator/controller/reasons.ts");
});

test("every reason in the list is given by the code: named in the controller, or one of the pods' reasons pod-trouble.ts looks for", () => {
  const all = controller.map(({ text }) => text).join("\n");
  const pods = new Set<string>(podWaitingReasons);
  assert.ok(source("operator/controller/pod-trouble.ts").includes("new Set(podWaitingReasons)"), "pod-trouble.ts looks for the listed pods' reasons");
  assert.deepEqual([...listed].filter((reason) => !pods.has(reason) && !all.includes(`"${reason}"`)), [], "entries no code gives");
});

test("every reason has its meaning and what to do", () => {
  for (const [reason, entry] of Object.entries(conditionReasons)) {
    assert.ok(entry.phases.length > 0, reason);
    assert.ok(entry.when.length > 10 && entry.todo.length > 3, reason);
  }
});

test(`${reasonsPage}'s table of the Events' own reasons is the one generated from operator/controller/reasons.ts`, () => {
  const page = blockText(source(reasonsPage), eventsBlock);
  assert.ok(page !== undefined, `${reasonsPage} has the generated block's markers (${eventsBlock.beginMarker})`);
  assert.equal(page, eventsReference(), "regenerate it: node --import tsx operator/cmd/reasons-reference.ts --write");
});

test("every Event the controller records names a listed reason, and each Event's own reason is recorded, with its type", () => {
  const recorded = controller.flatMap(({ path, text }) => [...text.matchAll(/record\(object, "(Normal|Warning)", "([A-Za-z]+)"/g)].map((match) => ({ path, type: match[1]!, reason: match[2]! })));
  assert.ok(recorded.length > 10, `only ${recorded.length} Events found: the scan is not reading the sources`);
  assert.deepEqual(recorded.filter(({ reason }) => !(reason in eventReasons) && !listed.has(reason)), [], "Events with no entry in operator/controller/reasons.ts");
  for (const [reason, entry] of Object.entries(eventReasons)) {
    assert.ok(!listed.has(reason), `${reason} is in both lists`);
    assert.deepEqual(recorded.filter((event) => event.reason === reason).map((event) => event.type), [entry.type], `${reason}: recorded once, as ${entry.type}`);
  }
});
