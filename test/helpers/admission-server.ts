// An admission webhook of the test's own: a local HTTPS server that answers the API server's
// AdmissionReviews, registered as a validating or mutating webhook configuration. hold.ts (hold or
// deny writes), write-log.ts (who wrote what) and inject.ts (a mutating injector) are built on it.
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { AdmissionregistrationV1Api, AppsV1Api, type V1Deployment, type V1LabelSelector, type V1RuleWithOperations } from "@kubernetes/client-node";
import type { LocalCluster } from "../../toolchain/cluster/cluster.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { eventually } from "./cluster.ts";

/** What a webhook needs of a cluster: its kubeconfig, and its folder (the CA and serving certificate). */
export type ClusterFiles = Pick<LocalCluster, "kubeconfig" | "dir">;

/** The admission response but its uid: allowed or not, and why not, or the patch of a mutation. */
export interface AdmissionAnswer {
  allowed: boolean;
  status?: { code: number; message?: string };
  patchType?: "JSONPatch";
  patch?: string;
}

export interface AdmissionWebhook {
  /** Names the configuration (`${purpose}.test.appstack.dev`) and the wait for it. */
  purpose: string;
  kind: "validating" | "mutating";
  configName: string;
  namespace: string;
  /** They must take in Deployment creates in `namespace`: the probe is one. */
  rules: V1RuleWithOperations[];
  timeoutSeconds: number;
  objectSelector?: V1LabelSelector;
  /** The probe Deployment, dry-run created until the webhook answers it. */
  probe: { name: string; labels?: Record<string, string>; answered?: (created: V1Deployment) => boolean };
}

export interface AdmissionServer {
  /** Removes the configuration: the API server stops calling. */
  unregister(): Promise<void>;
  /** Stops the server, once every request it holds has its answer. */
  close(): Promise<void>;
}

/**
 * Serves `webhook` in `local`: `onRequest` answers each request, at once or later. Returns once
 * the API server calls it (the probe's request reached the server, and `probe.answered` holds).
 */
export async function serveAdmission<Request extends { uid: string; name?: string }>(local: ClusterFiles, webhook: AdmissionWebhook, onRequest: (request: Request, answer: (answer: AdmissionAnswer) => void) => void): Promise<AdmissionServer> {
  const { purpose, kind, configName, namespace, probe } = webhook;
  const kc = loadKubeConfig(local.kubeconfig);
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  let probed = false;
  // The API server's serving certificate names 127.0.0.1 and is signed by the cluster's CA: good
  // enough for a webhook on loopback that the same API server calls.
  const pki = (file: string) => readFileSync(join(local.dir, "pki", file));
  const server: Server = createServer({ cert: pki("apiserver.crt"), key: pki("apiserver.key") }, (req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const { request } = JSON.parse(body) as { request: Request };
      if (request.name === probe.name) probed = true;
      onRequest(request, (answer) => {
        res.setHeader("Content-Type", "application/json");
        res.end(JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response: { uid: request.uid, ...answer } }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  // A test that fails before the webhook is removed must still let the process end.
  server.unref();
  const port = (server.address() as AddressInfo).port;

  const configuration = {
    name: `${purpose}.test.appstack.dev`,
    admissionReviewVersions: ["v1"],
    sideEffects: "None",
    // Whatever happens to this test, the cluster never stays blocked.
    failurePolicy: "Ignore",
    timeoutSeconds: webhook.timeoutSeconds,
    clientConfig: { url: `https://127.0.0.1:${port}/${purpose}`, caBundle: pki("ca.crt").toString("base64") },
    namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } },
    ...(webhook.objectSelector ? { objectSelector: webhook.objectSelector } : {}),
    rules: webhook.rules,
  };
  if (kind === "validating") await admission.createValidatingWebhookConfiguration({ body: { metadata: { name: configName }, webhooks: [configuration] } });
  else await admission.createMutatingWebhookConfiguration({ body: { metadata: { name: configName }, webhooks: [{ ...configuration, reinvocationPolicy: "Never" }] } });

  // The API server picks the configuration up asynchronously: the probe's dry-run create tells when it has.
  const apps = kc.makeApiClient(AppsV1Api);
  const body = { metadata: { name: probe.name, ...(probe.labels ? { labels: probe.labels } : {}) }, spec: { selector: { matchLabels: { app: probe.name } }, template: { metadata: { labels: { app: probe.name } }, spec: { containers: [{ name: "c", image: "x" }] } } } };
  await eventually(`the ${purpose} webhook to be called`, async () => {
    const created = await apps.createNamespacedDeployment({ namespace, body, dryRun: "All" });
    return (probed && (probe.answered?.(created) ?? true)) || undefined;
  });

  return {
    async unregister() {
      if (kind === "validating") await admission.deleteValidatingWebhookConfiguration({ name: configName });
      else await admission.deleteMutatingWebhookConfiguration({ name: configName });
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // The API server keeps its connections to the webhook open; answered, they are idle.
      server.closeIdleConnections();
      await closed;
    },
  };
}
