import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { customResourceDefinitions } from "../../components/kinds.ts";
import type { AppSpec } from "../../components/app.ts";
import type { MemcachedSpec } from "../../components/memcached.ts";
import { renderedCrds } from "../../components/crd-yaml.ts";

test("the committed CRD YAML is generated from the kinds' definitions (run `npm run crds` after a change)", () => {
  for (const [file, yaml] of renderedCrds()) assert.equal(readFileSync(file, "utf8"), yaml, `${file} is stale`);
});

test("both kinds have status and scale subresources and the promised printer columns", () => {
  const columns = customResourceDefinitions().map((crd) => {
    const version = (crd.spec["versions"] as { subresources: Record<string, unknown>; additionalPrinterColumns: { name: string }[] }[])[0]!;
    assert.ok(version.subresources["status"]);
    assert.ok(version.subresources["scale"]);
    return version.additionalPrinterColumns.map((c) => c.name);
  });
  assert.deepEqual(columns[0], ["Image", "Desired", "Ready", "Status", "Plan", "Age"]);
  assert.deepEqual(columns[1], ["Size", "Ready", "Status", "Plan", "Age"]);
});

/** Every field under `path` that `kubectl explain` would show without a description. */
function undocumented(schema: Record<string, unknown>, path: string): string[] {
  // metadata is ObjectMeta, explained by the API server itself; a CRD may not even describe it.
  if (/^\w+\.metadata$/.test(path)) return [];
  const missing = typeof schema["description"] === "string" && schema["description"] !== "" ? [] : [path];
  const properties = (schema["properties"] ?? {}) as Record<string, Record<string, unknown>>;
  const items = schema["items"] as Record<string, unknown> | undefined;
  return [
    ...missing,
    ...Object.entries(properties).flatMap(([name, child]) => undocumented(child, `${path}.${name}`)),
    // An array's items are explained under the array's own name, as kubectl does.
    ...(items?.["properties"] ? Object.entries(items["properties"] as Record<string, Record<string, unknown>>).flatMap(([name, child]) => undocumented(child, `${path}.${name}`)) : []),
  ];
}

test("kubectl explain documents every field of both kinds, status included", () => {
  for (const crd of customResourceDefinitions()) {
    const version = (crd.spec["versions"] as { schema: { openAPIV3Schema: Record<string, unknown> } }[])[0]!;
    const kind = (crd.spec["names"] as { kind: string }).kind;
    assert.deepEqual(undocumented(version.schema.openAPIV3Schema, kind.toLowerCase()), [], `${kind}: fields without a description`);
  }
});

test("spec.deletionPolicy: Delete or Orphan on both kinds, with no default (absent means Delete: stored objects stay as they are)", () => {
  for (const crd of customResourceDefinitions()) {
    const version = (crd.spec["versions"] as { schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, Record<string, unknown>> } } } } }[])[0]!;
    const policy = version.schema.openAPIV3Schema.properties.spec.properties["deletionPolicy"];
    assert.deepEqual(policy?.["enum"], ["Delete", "Orphan"], crd.metadata.name);
    assert.equal("default" in (policy ?? {}), false, crd.metadata.name);
  }
});

test("a spec field with a default is required in the kind's TypeScript type, and left out of the CRD's required list (the API server fills it in)", () => {
  const specOf = (crd: ReturnType<typeof customResourceDefinitions>[number]) => (crd.spec["versions"] as { schema: { openAPIV3Schema: { properties: { spec: { required?: string[]; properties: Record<string, { default?: unknown }> } } } } }[])[0]!.schema.openAPIV3Schema.properties.spec;
  const [app, memcached] = customResourceDefinitions().map(specOf);
  assert.deepEqual(app?.required, ["image"]);
  assert.equal(app?.properties["replicas"]?.default, 1);
  assert.deepEqual(memcached?.required, ["size"]);
  assert.equal(memcached?.properties["image"]?.default, "memcached:1.6");
  // The types: replicas and image are plain fields, present on every stored object.
  const replicas: AppSpec["replicas"] = 1;
  const image: MemcachedSpec["image"] = "memcached:1.6";
  assert.ok(replicas && image);
});
