// App: the general web workload. The schema rejects what it can, so that `kubectl apply` fails with
// the reason instead of the operator finding out later.
import { ageColumn, customResourceDefinition, planColumn, readyReasonColumn, workloadSpecFields, workloadSubresources, workloadStatus } from "./schema.ts";
import { intOrString, stringMap, Type, type Static } from "./schema-kit.ts";

export function imageSchema(options: { default?: string; description?: string } = {}) {
  return Type.String({
    minLength: 1,
    maxLength: 1024,
    pattern: "^[^\\s]+$",
    ...(options.default ? { default: options.default } : {}),
    description: options.description ?? "Container image reference, for example nginx:1.27.",
  });
}

const quantity = intOrString({
  description: "A quantity, as in core/v1: 500m, 0.5, 128Mi.",
  pattern: "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
});

// Bounded so that the CEL rule below stays within the API server's cost budget.
// Names as the Pod API takes them: a standard resource, or an extended one fully qualified outside
// kubernetes.io (nvidia.com/gpu); anything else would pass here and fail at the Deployment.
const resourceList = (description: string) => stringMap(quantity, {
  maxProperties: 6,
  description,
  "x-kubernetes-validations": [
    {
      rule: "self.all(name, name in ['cpu', 'memory', 'ephemeral-storage'] || name.startsWith('hugepages-') || (name.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$') && !name.contains('kubernetes.io/')))",
      message: "resource names are cpu, memory, ephemeral-storage, hugepages-<size>, or an extended resource such as example.com/gpu",
    },
    {
      // The API server caps a larger quantity at 2^63-1 (a Deployment would store another value
      // than the one asked for, for ever unlike the spec); quantity() caps it too, so the largest
      // value is refused with it.
      rule: "self.all(name, !quantity(string(self[name])).isLessThan(quantity('0')) && quantity(string(self[name])).isLessThan(quantity('9223372036854775807')))",
      message: "each quantity must be at least 0 and less than 9223372036854775807 (2^63-1), the largest a Kubernetes quantity holds",
    },
    {
      // Found by the hostile-input soak: `nvidia.com/gpu: 100m` passed here and failed at the Deployment.
      rule: "self.all(name, !name.contains('/') || quantity(string(self[name])).isInteger())",
      message: "an extended resource (such as example.com/gpu) counts whole units: 1, not 100m",
    },
    {
      rule: "self.all(name, !name.startsWith('hugepages-') || (isQuantity(name.substring(10)) && quantity(name.substring(10)).isInteger() && quantity(name.substring(10)).asInteger() > 0 && quantity(string(self[name])).isInteger() && quantity(string(self[name])).asInteger() % quantity(name.substring(10)).asInteger() == 0))",
      message: "hugepages-<size> takes a whole multiple of its page size, such as hugepages-2Mi: 4Mi",
    },
  ],
});

const resources = Type.Object({
  requests: Type.Optional(resourceList("Resources the container is guaranteed, by name (cpu, memory, ...).")),
  limits: Type.Optional(resourceList("Resources the container may use at most, by name; each at least its request.")),
}, {
  description: "Compute requests and limits of the container, as in core/v1 ResourceRequirements.",
  "x-kubernetes-validations": [
    {
      rule: "!has(self.requests) || !has(self.limits) || self.requests.all(r, !(r in self.limits) || quantity(string(self.requests[r])).compareTo(quantity(string(self.limits[r]))) <= 0)",
      message: "every request must be less than or equal to its limit",
    },
    {
      // The Pod API overcommits neither: a request without its limit, or another, fails at the Deployment.
      rule: "!has(self.requests) || self.requests.all(r, !(r.contains('/') || r.startsWith('hugepages-')) || (has(self.limits) && r in self.limits && quantity(string(self.requests[r])).compareTo(quantity(string(self.limits[r]))) == 0))",
      message: "extended resources (such as example.com/gpu) and hugepages-<size> are not overcommitted: each request needs a limit equal to it",
    },
    {
      rule: "!((has(self.requests) && self.requests.exists(r, r.startsWith('hugepages-'))) || (has(self.limits) && self.limits.exists(r, r.startsWith('hugepages-')))) || (has(self.requests) && self.requests.exists(r, r in ['cpu', 'memory'])) || (has(self.limits) && self.limits.exists(r, r in ['cpu', 'memory']))",
      message: "hugepages-<size> need a cpu or memory request or limit too",
    },
  ],
});

const env = Type.Array(
  Type.Object({
    name: Type.String({ minLength: 1, maxLength: 256, pattern: "^[-._a-zA-Z][-._a-zA-Z0-9]*$", description: "The variable's name, unique in the list." }),
    value: Type.Optional(Type.String({ maxLength: 32768, description: "The variable's value; empty when absent." })),
  }),
  {
    maxItems: 128,
    description: "Environment variables of the container.",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["name"],
  },
);

export const appSpecSchema = Type.Object({
  image: imageSchema(),
  replicas: Type.Integer({ format: "int32", default: 1, minimum: 0, maximum: 1000, description: "Number of pods (kubectl scale changes it)." }),
  port: Type.Optional(Type.Integer({ format: "int32", minimum: 1, maximum: 65535, description: "When set, the container exposes it and a ClusterIP Service named after the App routes to it." })),
  env: Type.Optional(env),
  resources: Type.Optional(resources),
  // Default profile Baseline: an App's image may need root (nginx binds port 80 as root).
  ...workloadSpecFields("Baseline"),
}, {
  description: "The workload: one container image run as a Deployment, with a Service when it has a port.",
});

export type AppSpec = Static<typeof appSpecSchema>;

export const appCrd = customResourceDefinition(
  "App",
  "apps",
  { description: "An App runs one container image as a Deployment, with a ClusterIP Service when it has a port; appstack reconciles it through a Pulumi stack of its own.", spec: appSpecSchema, status: workloadStatus() },
  {
    shortNames: ["asapp"],
    subresources: workloadSubresources(".spec.replicas"),
    printerColumns: [
      { name: "Image", type: "string", jsonPath: ".spec.image" },
      { name: "Desired", type: "integer", jsonPath: ".spec.replicas" },
      { name: "Ready", type: "integer", jsonPath: ".status.readyReplicas" },
      readyReasonColumn,
      planColumn,
      ageColumn,
    ],
  },
);
