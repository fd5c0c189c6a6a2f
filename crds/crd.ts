// A kind's CustomResourceDefinition, derived from its API (KindApi): its own spec fields and
// appstack's common ones, the status every kind reports with the kind's own fields, the status
// and scale subresources, and the printer columns every kind shows after its own.
import { defaultGroup, version } from "./types.ts";
import { openApi, Type, type JsonSchema, type TProperties } from "./schema-kit.ts";
import { commonSpecFields } from "./spec-fields.ts";
import { workloadStatus } from "./status-schema.ts";

/** What a kind says of its API; everything else of its CRD is appstack's. */
export interface KindApi<F extends TProperties = TProperties> {
  /**
   * The API group of its objects, a DNS subdomain with at least one dot: batch.example.com. Default
   * appstack.dev. Its CRD is `<plural>.<group>`, and its objects' apiVersion `<group>/v1alpha1`.
   */
  readonly group?: string;
  /** The kind, in UpperCamelCase: App. */
  readonly kind: string;
  /** Its plural, lower case: apps. */
  readonly plural: string;
  readonly shortNames?: readonly string[];
  /** What an object of the kind is, for `kubectl explain`. */
  readonly description: string;
  /** The kind's own spec fields (TypeBox), and what the spec is; appstack adds the common fields after them. */
  readonly spec: { readonly description: string; readonly fields: F };
  /** Status fields only this kind reports, beside those every kind does. */
  readonly status?: Readonly<Record<string, JsonSchema>>;
  /** Printer columns before the Status, Plan and Age columns every kind shows. */
  readonly printerColumns: readonly JsonSchema[];
  /** The spec field `kubectl scale` and an HPA change (the scale subresource's specReplicasPath): .spec.replicas. Absent: no scale subresource (a kind without replicas). */
  readonly replicasPath?: string;
}

/** The API group of `api`'s objects. */
export function groupOf(api: Pick<KindApi, "group">): string {
  return api.group ?? defaultGroup;
}

/** The spec's schema: the kind's own fields, then the common ones (`kinds`: every kind's name, for spec.dependsOn). */
export function specSchema<F extends TProperties>(api: KindApi<F>, kinds: readonly string[]) {
  return Type.Object({ ...api.spec.fields, ...commonSpecFields(kinds) }, { description: api.spec.description });
}

const planColumn = { name: "Plan", type: "string", jsonPath: ".status.preview.planId", description: "A plan waiting for approval." };

const readyReasonColumn = {
  name: "Status",
  type: "string",
  jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
};

/** status, and scale driven by `specReplicasPath` (what `kubectl scale` and an HPA change), if any. */
function workloadSubresources(specReplicasPath: string | undefined): JsonSchema {
  if (specReplicasPath === undefined) return { status: {} };
  return { status: {}, scale: { specReplicasPath, statusReplicasPath: ".status.replicas", labelSelectorPath: ".status.selector" } };
}

const ageColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };

// The API server takes any DNS subdomain of up to 253 characters as an object's name, but the
// name also names the Service and is a label value of every child: refused here, at apply time,
// rather than by the first `pulumi up`.
const nameRule = {
  rule: "self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
  message: "metadata.name must be a DNS-1035 label of at most 63 characters (lower case letters, digits and '-', starting with a letter): it names the object's Service and labels its pods",
  reason: "FieldValueInvalid",
};

/** An object cannot wait for itself; longer cycles are the reconciler's to find (they span objects). */
const selfDependencyRule = (kind: string) => ({
  rule: `!has(self.spec) || !has(self.spec.dependsOn) || !self.spec.dependsOn.exists(d, d.kind == '${kind}' && d.name == self.metadata.name)`,
  message: "spec.dependsOn names the object itself: an object cannot wait for itself",
  fieldPath: ".spec.dependsOn",
  reason: "FieldValueInvalid",
});

export interface CustomResourceDefinition {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string; labels: Record<string, string> };
  spec: JsonSchema;
}

/** The kind's CRD; `kinds`: every kind's name, the kinds its spec.dependsOn may name. */
export function customResourceDefinition(api: KindApi, kinds: readonly string[]): CustomResourceDefinition {
  const { kind, plural } = api;
  const group = groupOf(api);
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${group}`, labels: { "app.kubernetes.io/part-of": "appstack" } },
    spec: {
      group,
      scope: "Namespaced",
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List`, categories: ["appstack"], ...(api.shortNames ? { shortNames: [...api.shortNames] } : {}) },
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          subresources: workloadSubresources(api.replicasPath),
          additionalPrinterColumns: [...api.printerColumns, readyReasonColumn, planColumn, ageColumn],
          schema: {
            openAPIV3Schema: {
              type: "object",
              required: ["spec"],
              description: api.description,
              "x-kubernetes-validations": [nameRule, selfDependencyRule(kind)],
              properties: {
                apiVersion: { type: "string", description: "APIVersion defines the versioned schema of this representation of an object." },
                kind: { type: "string", description: "Kind is a string value representing the REST resource this object represents." },
                // The API server refuses anything here but the type: kubectl explain takes ObjectMeta's own text.
                metadata: { type: "object" },
                spec: openApi(specSchema(api, kinds)),
                status: workloadStatus(api.status),
              },
            },
          },
        },
      ],
    },
  };
}
