// A mutating admission webhook, as sidecar injectors and policy engines are: it adds an env var to
// the first container of the Deployments of one name on every create and update, whoever writes
// them. What it adds is the cluster's, never drift.
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { AdmissionregistrationV1Api, AppsV1Api, type V1Deployment } from "@kubernetes/client-node";
import { instanceLabel } from "../../components/metadata.ts";
import type { LocalCluster } from "../../toolchain/cluster/cluster.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { eventually } from "./cluster.ts";

export interface Injector {
  /** Removes the webhook and stops its server. */
  remove(): Promise<void>;
}

interface AdmissionReview {
  request: { uid: string; name?: string; object?: V1Deployment };
}

/** The JSON patch that adds `env` to the first container, unless it is there already. */
function injection(deployment: V1Deployment | undefined, env: { name: string; value: string }): object[] {
  const container = deployment?.spec?.template.spec?.containers[0];
  if (!container || container.env?.some((e) => e.name === env.name)) return [];
  const path = "/spec/template/spec/containers/0/env";
  return container.env ? [{ op: "add", path: `${path}/-`, value: env }] : [{ op: "add", path, value: [env] }];
}

/** Injects `env` into the Deployments named `name` in `namespace` until removed. */
export async function injectEnv(local: LocalCluster, namespace: string, name: string, env: { name: string; value: string }): Promise<Injector> {
  const kc = loadKubeConfig(local.kubeconfig);
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  const probeName = `${name}-inject-probe`;
  const pki = (file: string) => readFileSync(join(local.dir, "pki", file));
  const server: Server = createServer({ cert: pki("apiserver.crt"), key: pki("apiserver.key") }, (req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const { request } = JSON.parse(body) as AdmissionReview;
      const patch = request.name === name || request.name === probeName ? injection(request.object, env) : [];
      const response = { uid: request.uid, allowed: true, ...(patch.length ? { patchType: "JSONPatch", patch: Buffer.from(JSON.stringify(patch)).toString("base64") } : {}) };
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  server.unref();
  const port = (server.address() as AddressInfo).port;
  const configName = `appstack-test-inject-${name}`;
  await admission.createMutatingWebhookConfiguration({
    body: {
      metadata: { name: configName },
      webhooks: [{
        name: "inject.test.appstack.dev",
        admissionReviewVersions: ["v1"],
        sideEffects: "None",
        // Whatever happens to this test, the cluster never stays blocked; a test checks the injection.
        failurePolicy: "Ignore",
        reinvocationPolicy: "Never",
        timeoutSeconds: 10,
        clientConfig: { url: `https://127.0.0.1:${port}/inject`, caBundle: pki("ca.crt").toString("base64") },
        namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } },
        objectSelector: { matchLabels: { [instanceLabel]: name } },
        rules: [{ apiGroups: ["apps"], apiVersions: ["v1"], resources: ["deployments"], operations: ["CREATE", "UPDATE"], scope: "Namespaced" }],
      }],
    },
  });
  // The API server picks the configuration up asynchronously: a dry-run create shows when it has.
  const apps = kc.makeApiClient(AppsV1Api);
  const probe = { metadata: { name: probeName, labels: { [instanceLabel]: name } }, spec: { selector: { matchLabels: { app: probeName } }, template: { metadata: { labels: { app: probeName } }, spec: { containers: [{ name: "c", image: "x" }] } } } };
  await eventually("the injecting webhook to be called", async () => {
    const created = await apps.createNamespacedDeployment({ namespace, body: probe, dryRun: "All" });
    return created.spec?.template.spec?.containers[0]?.env?.some((e) => e.name === env.name) || undefined;
  });
  return {
    async remove() {
      await admission.deleteMutatingWebhookConfiguration({ name: configName });
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await closed;
    },
  };
}
