import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { customResourceDefinitions } from "../../crds/index.ts";
import { renderedCrds } from "../../crds/yaml.ts";

test("the committed CRD YAML is generated from crds/*.ts (run `npm run crds` after a change)", () => {
  for (const [file, yaml] of renderedCrds()) assert.equal(readFileSync(file, "utf8"), yaml, `${file} is stale`);
});

test("both kinds have status and scale subresources and the promised printer columns", () => {
  const columns = customResourceDefinitions.map((crd) => {
    const version = (crd.spec["versions"] as { subresources: Record<string, unknown>; additionalPrinterColumns: { name: string }[] }[])[0]!;
    assert.ok(version.subresources["status"]);
    assert.ok(version.subresources["scale"]);
    return version.additionalPrinterColumns.map((c) => c.name);
  });
  assert.deepEqual(columns[0], ["Image", "Desired", "Ready", "Status", "Plan", "Age"]);
  assert.deepEqual(columns[1], ["Size", "Ready", "Status", "Plan", "Age"]);
});
