// The CRDs as plain YAML, for people who install them with kubectl. Generated from the TypeScript
// source by `npm run crds`; a unit test fails when the committed files are stale.
import { join } from "node:path";
import yaml from "js-yaml";
import { apiPolicies, customResourceDefinitions } from "./kinds.ts";

export const yamlDir = join(import.meta.dirname, "..", "crds", "yaml");

export function renderedCrds(): Map<string, string> {
  const header = "# Generated from the kinds' definitions (components/kinds.ts) by `npm run crds`; do not edit.\n";
  const dump = (object: object) => header + yaml.dump(object, { noRefs: true, lineWidth: -1 });
  const policies = apiPolicies().map((object) => object.kind === "ValidatingAdmissionPolicy" ? dump(object) : `---\n${yaml.dump(object, { noRefs: true, lineWidth: -1 })}`).join("");
  return new Map([
    ...customResourceDefinitions().map((crd): [string, string] => [join(yamlDir, `${crd.metadata.name}.yaml`), dump(crd)]),
    [join(yamlDir, "ownership-policy.yaml"), policies],
  ]);
}
