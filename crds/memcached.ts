// Memcached: the classic operator example, as an appstack kind.
import { imageSchema } from "./app.ts";
import { ageColumn, customResourceDefinition, planColumn, readyReasonColumn, workloadSpecFields, workloadSubresources, workloadStatus } from "./schema.ts";
import { Type, type Static } from "./schema-kit.ts";

export const defaultMemcachedImage = "memcached:1.6";

/** The memcache user of the official memcached image; any image runs as it under Restricted. */
export const defaultMemcachedUser = 11211;

export const memcachedSpecSchema = Type.Object({
  size: Type.Integer({ format: "int32", minimum: 0, maximum: 100, description: "Number of memcached pods." }),
  image: imageSchema({ default: defaultMemcachedImage, description: `The memcached image (default ${defaultMemcachedImage}).` }),
  // Default profile Restricted, as user 11211: memcached needs no root.
  ...workloadSpecFields("Restricted", defaultMemcachedUser),
}, {
  description: "The memcached cluster: how many pods, which image.",
});

export type MemcachedSpec = Static<typeof memcachedSpecSchema>;

export const memcachedCrd = customResourceDefinition(
  "Memcached",
  "memcacheds",
  {
    description: "A Memcached runs memcached pods as a Deployment with a ClusterIP Service on port 11211; appstack reconciles it through a Pulumi stack of its own.",
    spec: memcachedSpecSchema,
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
