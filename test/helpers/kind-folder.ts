// Kinds that exist nowhere in the repository: a test writes their files into a folder of its own
// under the system's temporary folder, outside the repository, and gives it to --kinds (or loads
// it, components/kind-files.ts). Each file imports only what a kind's author has: `appstack/kinds`.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A new folder outside the repository holding `files` (name: source). */
export function kindFolder(files: Readonly<Record<string, string>>): string {
  const folder = mkdtempSync(join(tmpdir(), "appstack-kinds-"));
  for (const [name, source] of Object.entries(files)) writeFileSync(join(folder, name), source);
  return folder;
}

/**
 * A BatchRun of batch.example.com: a ConfigMap holding its message and a Job that echoes it. Its
 * message has a pattern, and a CEL rule with a message of its own.
 */
export const batchRunSource = `
import { childKind, childMetadata, declareChildren, defineKind, pulumi, Type, type ChildManifest, type Owner } from "appstack/kinds";

const fields = {
  message: Type.String({
    minLength: 1,
    pattern: "^[a-z ]+$",
    description: "What the Job echoes, in lower case letters and spaces.",
    "x-kubernetes-validations": [{ rule: "self.size() <= 40", message: "spec.message is at most 40 characters: the Job echoes it on one line" }],
  }),
};

type Spec = { message: string };

const configMapChild = childKind({ apiVersion: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true });
const jobChild = childKind({ apiVersion: "batch/v1", kind: "Job", plural: "jobs", namespaced: true });
const childKinds = [configMapChild, jobChild] as const;

function children(owner: Owner, spec: Spec): ChildManifest[] {
  const metadata = childMetadata(owner, owner.name);
  const job = { metadata, spec: { backoffLimit: 0, template: { spec: { restartPolicy: "Never", containers: [{ name: "echo", image: "busybox:1.36", command: ["echo", spec.message] }] } } } };
  return [
    { kind: "ConfigMap", name: owner.name, manifest: { metadata, data: { message: spec.message } } },
    { kind: "Job", name: owner.name, manifest: job },
  ];
}

class BatchRun extends pulumi.ComponentResource {
  constructor(owner: Owner, spec: Spec, opts: pulumi.ComponentResourceOptions) {
    super("example:batch:BatchRun", owner.name, {}, opts);
    declareChildren(owner.name, children(owner, spec), childKinds, this);
    this.registerOutputs({});
  }
}

export default defineKind({
  api: {
    group: "batch.example.com",
    kind: "BatchRun",
    plural: "batchruns",
    description: "A BatchRun keeps its message in a ConfigMap and echoes it with a Job.",
    spec: { description: "The message.", fields },
    printerColumns: [{ name: "Message", type: "string", jsonPath: ".spec.message" }],
  },
  appName: (object) => object.metadata.name,
  childKinds,
  children,
  component: (owner, spec, opts) => new BatchRun(owner, spec, opts),
  replicas: () => 0,
});
`;

/** A kind whose own children are refused: it declares ConfigMaps, and makes a Secret too. */
export const misfitSource = `
import { childKind, childMetadata, defineKind, Type } from "appstack/kinds";

const configMapChild = childKind({ apiVersion: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true });

export default defineKind({
  api: { group: "batch.example.com", kind: "Misfit", plural: "misfits", description: "Makes a child of a kind it does not declare.", spec: { description: "Nothing.", fields: { note: Type.Optional(Type.String({ description: "A note." })) } }, printerColumns: [] },
  appName: (object) => object.metadata.name,
  childKinds: [configMapChild],
  children: (owner) => [
    { kind: "ConfigMap", name: owner.name, manifest: { metadata: childMetadata(owner, owner.name), data: {} } },
    { kind: "Secret", name: owner.name, manifest: { metadata: childMetadata(owner, owner.name), stringData: { key: "value" } } },
  ],
  component: () => {
    throw new Error("never reached: its children are refused first");
  },
  replicas: () => 0,
});
`;

/** A kind whose component throws inside the object's Pulumi program. */
export const faultySource = `
import { childKind, childMetadata, defineKind, Type } from "appstack/kinds";

const configMapChild = childKind({ apiVersion: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true });

export default defineKind({
  api: { group: "batch.example.com", kind: "Faulty", plural: "faulties", description: "Its component throws.", spec: { description: "Nothing.", fields: { note: Type.Optional(Type.String({ description: "A note." })) } }, printerColumns: [] },
  appName: (object) => object.metadata.name,
  childKinds: [configMapChild],
  children: (owner) => [{ kind: "ConfigMap", name: owner.name, manifest: { metadata: childMetadata(owner, owner.name), data: {} } }],
  component: () => {
    throw new Error("the faulty component gives up on purpose");
  },
  replicas: () => 0,
});
`;

/** A kind file that does not even parse. */
export const brokenSource = "import { defineKind } from \"appstack/kinds\";\nexport default defineKind({ api: { kind: \"Broken\" \n";
