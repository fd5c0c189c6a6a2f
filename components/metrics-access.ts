// Who may read the operator's /metrics, as kubebuilder's scaffolds grant it (config/rbac's
// metrics_auth_role and metrics_reader_role): the operator may ask the API server to review a
// scraper's token and access (TokenReview, SubjectAccessReview), and a ClusterRole that allows
// `get` on /metrics is there for a Prometheus ServiceAccount to be bound to.
import * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";

/** What the operator needs to check a scrape's token and its user (operator/manager/metrics-reviews.ts). */
export const metricsAuthRules = [
  { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
  { apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"] },
];

/**
 * What a scraper needs. A non-resource URL is not the operator's alone: the same rule lets its
 * holder read the API server's own /metrics, as kubebuilder's metrics-reader does.
 */
export const metricsReaderRules = [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }];

/** The reader ClusterRole's name for the install named `name`: the one a Prometheus ServiceAccount is bound to. */
export function metricsReaderRole(operatorName: string, name: string): string {
  return `${operatorName}-${name}-metrics-reader`;
}

/**
 * The operator's right to review (a ClusterRole and its ClusterRoleBinding: the reviews are not
 * namespaced, whatever namespaces the install watches) and the reader ClusterRole.
 */
export function metricsAccess(operatorName: string, name: string, subjects: k8s.types.input.rbac.v1.Subject[], labels: Record<string, string>, parent: pulumi.Resource): void {
  const auth = new k8s.rbac.v1.ClusterRole(`${name}-metrics-auth`, { metadata: { name: `${operatorName}-${name}-metrics-auth`, labels }, rules: metricsAuthRules }, { parent });
  new k8s.rbac.v1.ClusterRoleBinding(`${name}-metrics-auth`, {
    metadata: { name: `${operatorName}-${name}-metrics-auth`, labels },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: auth.metadata.name },
    subjects,
  }, { parent });
  new k8s.rbac.v1.ClusterRole(`${name}-metrics-reader`, { metadata: { name: metricsReaderRole(operatorName, name), labels }, rules: metricsReaderRules }, { parent });
}
