// Memcached: the classic operator example, as an appstack kind.
import { imageSchema } from "./app.ts";
import { ageColumn, customResourceDefinition, deletionPolicySchema, dependsOnSchema, planColumn, serviceAccountNameSchema, podSecuritySchema, readyReasonColumn, suspendSchema, updatePolicySchema, workloadSubresources, workloadStatus } from "./schema.ts";

export const defaultMemcachedImage = "memcached:1.6";

/** The memcache user of the official memcached image; any image runs as it under Restricted. */
export const defaultMemcachedUser = 11211;

export const memcachedCrd = customResourceDefinition(
  "Memcached",
  "memcacheds",
  {
    description: "A Memcached runs memcached pods as a Deployment with a ClusterIP Service on port 11211; appstack reconciles it through a Pulumi stack of its own.",
    spec: {
      type: "object",
      description: "The memcached cluster: how many pods, which image.",
      required: ["size"],
      properties: {
        size: { type: "integer", format: "int32", minimum: 0, maximum: 100, description: "Number of memcached pods." },
        image: { ...imageSchema, default: defaultMemcachedImage, description: `The memcached image (default ${defaultMemcachedImage}).` },
        updatePolicy: updatePolicySchema,
        podSecurity: podSecuritySchema("Restricted", defaultMemcachedUser),
        suspend: suspendSchema,
        deletionPolicy: deletionPolicySchema,
        dependsOn: dependsOnSchema,
        serviceAccountName: serviceAccountNameSchema,
      },
    },
    status: workloadStatus({
      nodes: { type: "array", items: { type: "string" }, description: "Sorted names of the memcached pods." },
    }),
  },
  {
    subresources: workloadSubresources(".spec.size"),
    printerColumns: [
      { name: "Size", type: "integer", jsonPath: ".spec.size" },
      { name: "Ready", type: "integer", jsonPath: ".status.readyReplicas" },
      readyReasonColumn,
      planColumn,
      ageColumn,
    ],
  },
);
