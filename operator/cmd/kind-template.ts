// The kind file `appstack new kind` writes (new-cli.ts): a whole, working kind, as
// docs/writing-a-kind.md describes one, that the kinds folder's loader (components/kind-files.ts)
// loads unedited. docs/writing-a-kind.md shows this template's output for its example, generated:
// `node --import tsx operator/cmd/kind-template.ts --write` writes it, with the sample's and the
// test's (kind-sample-templates.ts), and test/unit/new-kind.test.ts fails when the page's copies
// are not the templates' output, so the page and the command cannot tell two stories.
import { generatedBlock, runAsWriter, writeBlock } from "./generated-blocks.ts";
import { kindTestBlock, sampleBlock } from "./kind-sample-templates.ts";
import { exampleKind, type KindNames } from "./kind-names.ts";

/** The kind file for `names`: its spec, its children (a Deployment and a Service), its component and its definition. */
export function kindTemplate({ kind, group, plural }: KindNames): string {
  const component = `${kind}Component`;
  // A Pulumi type token, package:module:type: the group's first label is the package.
  const type = `${group.split(".")[0]}:index:${kind}`;
  return `// A ${kind} (${plural}.${group}): a container image run as a Deployment, with a ClusterIP
// Service in front of it. Written by \`appstack new kind ${kind} --group ${group}\`; make it
// your kind's: its spec's fields, the children it makes, its columns. docs/writing-a-kind.md says
// what a kind file may hold.
import { childMetadata, declareChildren, defineKind, deploymentChild, k8s, pulumi, selectorLabels, serviceChild, Type, type ChildManifest, type ObjectOf, type Owner } from "appstack/kinds";

/** The spec's own fields: each one's type, docs, default, bounds and CEL rules are its CRD's schema. */
const fields = {
  image: Type.String({
    minLength: 1,
    maxLength: 1024,
    description: "The container image its pods run, with its version: nginx:1.27.",
    "x-kubernetes-validations": [{ rule: "!self.endsWith(':latest')", message: "spec.image names a version, not :latest: a rollout must be repeatable" }],
  }),
  replicas: Type.Integer({ format: "int32", default: 1, minimum: 0, maximum: 100, description: "How many pods run the image (kubectl scale changes it)." }),
  port: Type.Integer({ format: "int32", default: 8080, minimum: 1, maximum: 65535, description: "The port the image serves on; the Service routes to it." }),
};

type Spec = ObjectOf<typeof fields>["spec"];

/** The kinds of child it makes: its watches, RBAC rules and drift repair cover exactly these. */
const childKinds = [deploymentChild, serviceChild] as const;

/** Its children, each named after it: exactly what its component applies. */
function children(owner: Owner, spec: Spec): ChildManifest[] {
  const metadata = childMetadata(owner, owner.name);
  const selector = selectorLabels(owner, owner.name);
  const deployment: k8s.types.input.apps.v1.Deployment = {
    metadata,
    spec: {
      replicas: spec.replicas,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels: metadata.labels },
        spec: {
          // Its pods never call the API.
          automountServiceAccountToken: false,
          containers: [{
            name: "app",
            image: spec.image,
            ports: [{ name: "http", containerPort: spec.port, protocol: "TCP" }],
            // Ready once the port takes connections: before that the Service sends it nothing.
            readinessProbe: { tcpSocket: { port: "http" }, periodSeconds: 2 },
          }],
        },
      },
    },
  };
  const service: k8s.types.input.core.v1.Service = {
    metadata,
    spec: { type: "ClusterIP", selector, ports: [{ name: "http", port: spec.port, targetPort: "http", protocol: "TCP" }] },
  };
  return [
    { kind: "Deployment", name: owner.name, manifest: deployment },
    { kind: "Service", name: owner.name, manifest: service },
  ];
}

/** What an object's Pulumi program makes: its children, as their kinds declare them. */
class ${component} extends pulumi.ComponentResource {
  /** Its Deployment, whose rollout the operator follows for Ready. */
  readonly deployment?: k8s.apps.v1.Deployment;
  readonly service?: k8s.core.v1.Service;

  constructor(owner: Owner, spec: Spec, opts: pulumi.ComponentResourceOptions) {
    super("${type}", owner.name, {}, opts);
    const declared = declareChildren(owner.name, children(owner, spec), childKinds, this);
    this.deployment = declared.Deployment;
    this.service = declared.Service;
    this.registerOutputs({ deployment: this.deployment?.metadata.name, service: this.service?.metadata.name });
  }
}

export default defineKind({
  api: {
    group: "${group}",
    kind: "${kind}",
    plural: "${plural}",
    description: "A ${kind} runs a container image as a Deployment, with a ClusterIP Service in front of it.",
    spec: { description: "What it runs: the image, how many pods, and the port they serve on.", fields },
    printerColumns: [
      { name: "Image", type: "string", jsonPath: ".spec.image" },
      { name: "Desired", type: "integer", jsonPath: ".spec.replicas" },
      { name: "Ready", type: "integer", jsonPath: ".status.readyReplicas" },
    ],
    replicasPath: ".spec.replicas",
  },
  appName: (object) => object.metadata.name,
  childKinds,
  children,
  component: (owner, spec, opts) => new ${component}(owner, spec, opts),
  replicas: (spec) => spec.replicas,
});
`;
}

export const kindTemplateBlock = generatedBlock("kind file template", "kind-template.ts", "docs/writing-a-kind.md", () => ["```ts", kindTemplate(exampleKind).trimEnd(), "```"].join("\n"));

// The sample's and the test's templates too: the page shows all three.
if (runAsWriter("kind-template.ts")) for (const block of [kindTemplateBlock, sampleBlock, kindTestBlock]) writeBlock(block);
