// The reviews that decide who reads /metrics (metrics-auth.ts), asked of the API server as the
// operator's own ServiceAccount: the install grants it `create` on tokenreviews and
// subjectaccessreviews (components/metrics-access.ts).
import { AuthenticationV1Api, AuthorizationV1Api, type KubeConfig } from "@kubernetes/client-node";
import { apiClient } from "../kube/clients.ts";
import type { ReviewedUser, Reviews } from "./metrics-auth.ts";

/** controller-runtime's TokenAccessReviewTimeout: a scrape waits no longer on the API server. */
const reviewTimeoutMs = 10_000;

/**
 * `config`: a kubeconfig of its own, not the reconciler's, whose write fence (operator/kube/write-fence.ts)
 * would refuse these POSTs while a replica hands its lease over, when its metrics matter most.
 */
export function apiServerReviews(config: KubeConfig): Reviews {
  const authentication = apiClient(config, AuthenticationV1Api, reviewTimeoutMs);
  const authorization = apiClient(config, AuthorizationV1Api, reviewTimeoutMs);
  return {
    async authenticate(token) {
      // No audiences: the API server's own, which a ServiceAccount token is issued for by default.
      const review = await authentication.createTokenReview({ body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } } });
      const user = review.status?.user;
      if (!review.status?.authenticated || !user?.username) return undefined;
      return { username: user.username, ...(user.uid ? { uid: user.uid } : {}), ...(user.groups ? { groups: user.groups } : {}), ...(user.extra ? { extra: user.extra } : {}) };
    },
    async authorize(user: ReviewedUser, verb, path) {
      const review = await authorization.createSubjectAccessReview({
        body: {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SubjectAccessReview",
          spec: {
            user: user.username,
            ...(user.uid ? { uid: user.uid } : {}),
            ...(user.groups ? { groups: [...user.groups] } : {}),
            ...(user.extra ? { extra: Object.fromEntries(Object.entries(user.extra).map(([key, values]) => [key, [...values]])) } : {}),
            nonResourceAttributes: { path, verb },
          },
        },
      });
      return review.status?.allowed === true;
    },
  };
}
