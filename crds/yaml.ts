// The CRDs as plain YAML, for people who install them with kubectl. Generated from the TypeScript
// source by `npm run crds`; a unit test fails when the committed files are stale.
import { join } from "node:path";
import yaml from "js-yaml";
import { customResourceDefinitions } from "./index.ts";

export const yamlDir = join(import.meta.dirname, "yaml");

export function renderedCrds(): Map<string, string> {
  const header = "# Generated from crds/*.ts by `npm run crds`; do not edit.\n";
  return new Map(customResourceDefinitions.map((crd) => [join(yamlDir, `${crd.metadata.name}.yaml`), header + yaml.dump(crd, { noRefs: true, lineWidth: -1 })]));
}
