// The spec fields appstack adds to every kind's own (update policy, suspension, deletion policy,
// dependencies, tenant identity), and the fields a kind with pods may take (Pod Security, the
// ServiceAccount token, a NetworkPolicy).
import { deletionPolicies, maxDependencies, podSecurityProfiles, updatePolicies, type PodSecurityProfile } from "./types.ts";
import { stringEnum, Type, type Static, type TObject } from "./schema-kit.ts";

/** Names in words, the last joined by `conjunction`: "App, Memcached or Redis". */
export function inWords(names: readonly string[], conjunction: "and" | "or"): string {
  const last = names.at(-1) ?? "";
  return names.length > 1 ? `${names.slice(0, -1).join(", ")} ${conjunction} ${last}` : last;
}

/** The spec fields every kind has, after its own; `kinds`: every kind's name, the kinds spec.dependsOn may name. */
export function commonSpecFields(kinds: readonly string[]) {
  return {
    updatePolicy: Type.Optional(stringEnum(updatePolicies, {
      default: "Auto",
      description: "Auto applies every change. Preview only previews changes; annotate appstack.dev/approve=<status.preview.planId> to apply that plan.",
    })),
    suspend: Type.Optional(Type.Boolean({
      description: "true stops every operation on the object: no pulumi up, no drift repair, no preview. The children are still observed and the status says what differs. A deletion leaves the children in place, as deletionPolicy Orphan does. false again applies whatever changed meanwhile.",
    })),
    // operator/controller/orphaning.ts. No default: absent reads as Delete, so objects stored
    // before the field existed stay as they are and an upgrade rewrites none.
    deletionPolicy: Type.Optional(stringEnum(deletionPolicies, {
      description:
        "What deleting this object does to its Deployment and Service. Delete (also when unset): pulumi destroy deletes them. Orphan: they stay as they are, running, without the ownerReference to this object, the label app.kubernetes.io/managed-by=appstack and appstack's pulumi.com/ annotations (the selector labels stay), and the stack is removed without a destroy. A suspended object (spec.suspend true) is always deleted as Orphan.",
    })),
    dependsOn: Type.Optional(dependsOnSchema(kinds)),
    serviceAccountName: Type.Optional(serviceAccountNameSchema),
  };
}

/** The fields commonSpecFields adds, as TypeScript reads them. */
export type CommonSpec = Static<TObject<ReturnType<typeof commonSpecFields>>>;

/** spec.podSecurity for a kind whose children run pods, with the kind's default profile (and user). */
export function podSecurityField(defaultProfile: PodSecurityProfile, defaultUser?: number) {
  return Type.Optional(podSecuritySchema(defaultProfile, defaultUser));
}

/**
 * spec.automountServiceAccountToken for a kind whose pods may call the Kubernetes API. No default:
 * absent reads as false, so objects stored before the field existed stay as they are.
 */
export function automountServiceAccountTokenField() {
  return Type.Optional(Type.Boolean({
    description: "true mounts the token of the pods' ServiceAccount (the namespace's default) into them, for an image that calls the Kubernetes API. Unset or false, none is mounted: a pod that never calls the API holds no credential for it.",
  }));
}

/** Whose pods spec.networkPolicy lets in: the object's namespace's, or every namespace's. */
export const networkPolicyPeers = ["Namespace", "AllNamespaces"] as const;

/**
 * spec.networkPolicy for a kind whose pods serve on `ports` (said in words). Opt in, with no
 * default: a NetworkPolicy that selects a pod refuses whatever it does not list, and who its
 * clients are is the user's to say. One choice only, whose pods: a policy finer than that (by
 * label, by address) is the user's own NetworkPolicy, which Kubernetes adds to this one.
 */
export function networkPolicyField(ports: string) {
  return Type.Optional(networkPolicySchema(ports));
}

function networkPolicySchema(ports: string) {
  return Type.Object({
    from: Type.Optional(stringEnum(networkPolicyPeers, {
      default: "Namespace",
      description: "Namespace (the default): the pods of this object's namespace. AllNamespaces: the pods of every namespace. Neither lets in clients outside the cluster's pods; the pods' node is always let in (kubelet's probes), as Kubernetes says.",
    })),
  }, {
    description: `When set, a NetworkPolicy named after this object selects its pods and lets in only TCP to ${ports}, from the pods \`from\` names; every other connection to them is refused, where the cluster's network plugin enforces NetworkPolicies. Egress is not restricted: what the pods connect to is the user's to limit, with a NetworkPolicy of their own. Unset (the default), none is made, and unsetting it deletes the one made.`,
  });
}

/** spec.networkPolicy, as TypeScript reads it. */
export type NetworkPolicySpec = Static<ReturnType<typeof networkPolicySchema>>;

/**
 * operator/controller/tenancy.ts. A plain name (a DNS-1123 subdomain, as a ServiceAccount's):
 * `system:serviceaccount:ns:sa` or `ns/sa` cannot be written, so no object names another
 * namespace's ServiceAccount.
 */
const serviceAccountNameSchema = Type.String({
  minLength: 1,
  maxLength: 253,
  pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
  description:
    "The ServiceAccount of this object's namespace whose rights the Pulumi engine and the operator use to create, change and delete this object's Deployment and Service (Kubernetes impersonation, as Flux's spec.serviceAccountName). Used only when the install turns tenant identities on (APPSTACK_DEFAULT_SERVICE_ACCOUNT); unset, the install's default ServiceAccount of this namespace is used. Not the pods' ServiceAccount. A name only: a ServiceAccount of another namespace cannot be named. What it may not do is refused by the API server, and the object is Stalled (reason Forbidden) with its words.",
});

/** operator/controller/dependencies.ts. */
const dependsOnSchema = (kinds: readonly string[]) => Type.Array(
  Type.Object({
    kind: stringEnum(kinds, { description: `${inWords(kinds, "or")}.` }),
    name: Type.String({ minLength: 1, maxLength: 63, pattern: "^[a-z]([-a-z0-9]*[a-z0-9])?$", description: "The object's name, in this object's namespace." }),
  }),
  {
    maxItems: maxDependencies,
    description:
      "Objects of this namespace (App or Memcached) that must be Ready for their current generation (Ready condition True, status.observedGeneration equal to metadata.generation) before a new spec of this object is applied. Until then nothing is created or changed, and the Ready condition (reason DependencyNotReady) names what it waits for, a missing object included. A cycle is reported as Stalled (reason DependencyCycle). Drift repair of children already applied and deletion do not wait.",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["kind", "name"],
  },
);

function podSecuritySchema(defaultProfile: PodSecurityProfile, defaultUser?: number) {
  const user = defaultUser === undefined ? "" : ` (default ${defaultUser})`;
  return Type.Object({
    profile: Type.Optional(stringEnum(podSecurityProfiles, {
      default: defaultProfile,
      description: "Baseline: the container runs as its image says, root included. Restricted: runAsNonRoot, allowPrivilegeEscalation false, every capability dropped, seccomp RuntimeDefault; the image must run as a numeric non-root user, or runAsUser names one.",
    })),
    runAsUser: Type.Optional(Type.Integer({ format: "int64", minimum: 1, maximum: 2147483647, description: `The user id the container runs as${user}; never 0 (root).` })),
  }, {
    description: `The Pod Security Standard the pods meet (default ${defaultProfile}). Restricted is what a namespace labelled pod-security.kubernetes.io/enforce=restricted admits.`,
  });
}

/** spec.podSecurity, as TypeScript reads it. */
export type PodSecurity = Static<ReturnType<typeof podSecuritySchema>>;

/** An entry of spec.dependsOn: an object of the same namespace whose new spec waits for it to be Ready. */
export type DependencyRef = Static<ReturnType<typeof dependsOnSchema>>[number];

