// A scraper of the operator's HTTPS /metrics, as Prometheus is one: a ServiceAccount, bound (or
// not) to the install's metrics-reader ClusterRole, and a token of it from the TokenRequest API.
import { get } from "node:https";
import { CoreV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { loadKubeConfig, responseOf } from "../../toolchain/cluster/readiness.ts";

/** Creates the ServiceAccount `namespace/name` (and, with `readerRole`, its ClusterRoleBinding to it) unless they exist; returns a token of it. */
export async function scraperToken(kubeconfig: string, namespace: string, name: string, readerRole?: string): Promise<string> {
  const kc = loadKubeConfig(kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  // 409: it exists already (a second call, or a second test of the file).
  const existing = (error: unknown) => {
    if ((error as { code?: number }).code !== 409) throw error;
  };
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } }).catch(existing);
  if (readerRole) {
    await kc.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
      body: {
        metadata: { name: `${namespace}-${name}-metrics-reader` },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: readerRole },
        subjects: [{ kind: "ServiceAccount", namespace, name }],
      },
    }).catch(existing);
  }
  const request = await core.createNamespacedServiceAccountToken({ namespace, name, body: { spec: { audiences: [], expirationSeconds: 4 * 3600 } } });
  return request.status!.token;
}

/**
 * GET over HTTPS with a bearer token (none: without one). The certificate is the operator's
 * self-signed one unless the install was given a Secret, so it is not verified here.
 */
export function httpsGet(url: string, token?: string): Promise<{ status: number; body: string }> {
  return responseOf(get, url, { rejectUnauthorized: false, headers: token ? { authorization: `Bearer ${token}` } : {} });
}

/** The metrics-reader ClusterRole of the install program (index.ts names its install `appstack`; components/metrics-access.ts). */
export const installReaderRole = "appstack-operator-appstack-metrics-reader";

/** A token of `default/metrics-scraper`, bound to the install's metrics-reader ClusterRole: made once per file (it lasts for hours), lazily. */
export function installScraper(kubeconfig: () => string): () => Promise<string> {
  let token: Promise<string> | undefined;
  return () => (token ??= scraperToken(kubeconfig(), "default", "metrics-scraper", installReaderRole));
}
