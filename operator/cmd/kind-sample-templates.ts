// What `appstack new kind` writes beside the kind file (new-cli.ts), as kubebuilder's `create api`
// writes config/samples/ and a test: a sample object of the kind, and a unit test of its component
// that runs on Pulumi's mocks, with no engine and no cluster. Both go in subfolders of the kinds
// folder (samples/, test/): its loader (components/kind-files.ts) loads every `*.ts` file at its top
// as a kind file, and nothing below. docs/writing-a-kind.md shows both for its example, generated
// with the kind file's template (kind-template.ts --write), and test/unit/new-kind.test.ts checks
// the page's copies, validates the sample against the kind's CRD and runs the test.
import { version } from "../../crds/types.ts";
import { generatedBlock } from "./generated-blocks.ts";
import { exampleKind, kindFileName, sampleFileName, testFileName, type KindNames } from "./kind-names.ts";

/** The sample object: the template's three fields, an image with its version (the CRD refuses :latest). */
export function sampleTemplate({ kind, group }: KindNames): string {
  return `# A ${kind} to try the kind with: \`kubectl apply -f\` this file once the operator runs with its
# kinds folder. Its spec is what ${testFileName(kind)} makes the component from.
apiVersion: ${group}/${version}
kind: ${kind}
metadata:
  name: ${kind.toLowerCase()}-sample
spec:
  # With its version: the CRD refuses an image that ends in :latest.
  image: nginx:1.27
  replicas: 2
  port: 80
`;
}

/** The unit test of the kind's component: made from the sample's spec on Pulumi's mocks, its children read back. */
export function kindTestTemplate({ kind }: KindNames): string {
  const lower = kind.toLowerCase();
  // Quoted here, not in the template's text: test/unit/layers.test.ts reads a quoted relative path as this module's import.
  const kindModule = JSON.stringify(`../${kindFileName(kind)}`);
  return `// A unit test of the ${kind} kind's component, on Pulumi's mocks (pulumi.runtime.setMocks): no
// engine, no cluster. It makes the component from the sample's spec (../${sampleFileName(kind)})
// and reads back the children it declares: a Deployment and a Service, with the sample's image,
// replicas and port. Change it as the kind changes. Run it in the project, with tsx installed
// there (npm install --save-dev tsx), by its path (kinds/ is the kinds folder by default):
//   node --import tsx --test kinds/${testFileName(kind)}
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { before, test } from "node:test";
import { k8s, parseYaml, pulumi, type Owner } from "appstack/kinds";

interface Sample {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly spec: { readonly image: string; readonly replicas: number; readonly port: number };
}

/** The type of every resource the component registers: what would reach the engine. */
const registered: string[] = [];

before(async () => {
  // Before the component is made: its resources register with the mocks, which answer each with its inputs.
  await pulumi.runtime.setMocks({
    newResource: (args) => {
      registered.push(args.type);
      return { id: \`\${args.name}-id\`, state: args.inputs as Record<string, unknown> };
    },
    call: (args) => args.inputs as Record<string, unknown>,
  }, "project", "test", false);
});

/** An output's value, once the mocks have registered its resource. */
const valueOf = <T>(output: pulumi.Output<T>) => new Promise<T>((resolve) => output.apply(resolve));

test("a ${kind} made from the sample's spec declares a Deployment and a Service with its image, replicas and port", async () => {
  const { default: ${lower} } = await import(${kindModule});
  const sample = parseYaml(readFileSync(new URL("../${sampleFileName(kind)}", import.meta.url), "utf8")) as Sample;
  const owner: Owner = { apiVersion: sample.apiVersion, kind: sample.kind, name: sample.metadata.name, namespace: sample.metadata.namespace ?? "default", uid: "uid-sample" };
  const component = ${lower}.component(owner, sample.spec, {}) as ReturnType<typeof ${lower}.component> & { service?: k8s.core.v1.Service };
  assert.ok(component.deployment && component.service, "it exposes its Deployment and its Service");

  const deployment = await valueOf(component.deployment.spec);
  assert.equal(deployment.replicas, sample.spec.replicas);
  const container = deployment.template.spec.containers[0];
  assert.equal(container?.image, sample.spec.image);
  assert.equal(container?.ports[0]?.containerPort, sample.spec.port);

  const service = await valueOf(component.service.spec);
  assert.equal(service.type, "ClusterIP");
  assert.deepEqual(service.ports.map((port) => [port.port, port.targetPort]), [[sample.spec.port, "http"]]);
  assert.deepEqual(service.selector, deployment.selector.matchLabels, "the Service routes to the Deployment's pods");
  assert.deepEqual(registered.filter((type) => type.startsWith("kubernetes:")).sort(), ["kubernetes:apps/v1:Deployment", "kubernetes:core/v1:Service"]);
});
`;
}

export const sampleBlock = generatedBlock("sample object template", "kind-template.ts", "docs/writing-a-kind.md", () => ["```yaml", sampleTemplate(exampleKind).trimEnd(), "```"].join("\n"));

export const kindTestBlock = generatedBlock("kind test template", "kind-template.ts", "docs/writing-a-kind.md", () => ["```ts", kindTestTemplate(exampleKind).trimEnd(), "```"].join("\n"));
