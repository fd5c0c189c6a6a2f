// An API server that is slow to answer, on demand: a validating admission webhook that holds the
// matching writes until the test lets them go. With it a test can stop an operation at a known
// point (a Deployment's create or delete in flight, the stack locked) instead of racing it.
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { AdmissionregistrationV1Api, AppsV1Api } from "@kubernetes/client-node";
import type { LocalCluster } from "../../toolchain/cluster/cluster.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { eventually } from "./cluster.ts";

export interface Hold {
  /** Resolves when a matching write (not a dry run) reaches the webhook and is being held; rejects after a minute without one. */
  readonly held: Promise<void>;
  /** How many matching writes have reached the webhook so far (each engine that tried sent one). */
  readonly requests: number;
  /** Lets every held write through, and removes the webhook. */
  release(): Promise<void>;
}

interface AdmissionReview {
  request: { uid: string; operation: string; dryRun?: boolean; name?: string; resource: { resource: string }; subResource?: string; options?: { fieldManager?: string } };
}

const probeName = "hold-probe";

const groups = { deployments: "apps", services: "" } as const;

/**
 * Holds `operation`s of the Deployments (or Services) named `name` in `namespace`; with
 * `fieldManager`, only the writes of a matching field manager (the engine's, not a person's).
 */
export async function holdWrites(local: Pick<LocalCluster, "kubeconfig" | "dir">, resource: keyof typeof groups, operation: "CREATE" | "UPDATE" | "DELETE", namespace: string, name: string, fieldManager?: RegExp): Promise<Hold> {
  const kc = loadKubeConfig(local.kubeconfig);
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  const waiting: Array<() => void> = [];
  let probed = false;
  let requests = 0;
  let markHeld!: () => void;
  const held = new Promise<void>((resolve, reject) => {
    markHeld = resolve;
    setTimeout(() => reject(new Error(`no ${operation} of ${resource} ${namespace}/${name} within a minute`)), 60_000).unref();
  });
  // Rejected before anyone waits on it (the test failed earlier), it must not fail the run.
  held.catch(() => undefined);

  // The API server's serving certificate names 127.0.0.1 and is signed by the cluster's CA: good
  // enough for a webhook on loopback that the same API server calls.
  const pki = (file: string) => readFileSync(join(local.dir, "pki", file));
  const server: Server = createServer({ cert: pki("apiserver.crt"), key: pki("apiserver.key") }, (req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const review = JSON.parse(body) as AdmissionReview;
      const answer = () => {
        res.setHeader("Content-Type", "application/json");
        res.end(JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response: { uid: review.request.uid, allowed: true } }));
      };
      if (review.request.name === probeName) probed = true;
      const { request } = review;
      if (request.dryRun || request.operation !== operation || request.name !== name || request.resource.resource !== resource || request.subResource) return answer();
      if (fieldManager && !fieldManager.test(request.options?.fieldManager ?? "")) return answer();
      requests++;
      waiting.push(answer);
      markHeld();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  // A test that fails before release() must still let the process end.
  server.unref();
  const port = (server.address() as AddressInfo).port;

  const configName = `appstack-test-hold-${resource}-${operation.toLowerCase()}`;
  await admission.createValidatingWebhookConfiguration({
    body: {
      metadata: { name: configName },
      webhooks: [
        {
          name: "hold.test.appstack.dev",
          admissionReviewVersions: ["v1"],
          sideEffects: "None",
          // Whatever happens to this test, the cluster never stays blocked.
          failurePolicy: "Ignore",
          timeoutSeconds: 30,
          clientConfig: { url: `https://127.0.0.1:${port}/hold`, caBundle: pki("ca.crt").toString("base64") },
          namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } },
          // Deployment creates always pass by the webhook: the probe below is one.
          rules: [
            { apiGroups: [groups[resource]], apiVersions: ["v1"], resources: [resource], operations: [operation], scope: "Namespaced" },
            { apiGroups: ["apps"], apiVersions: ["v1"], resources: ["deployments"], operations: ["CREATE"], scope: "Namespaced" },
          ],
        },
      ],
    },
  });
  // The API server picks the configuration up asynchronously; the probe's dry-run create (the
  // rule takes in creates for it) tells when it has.
  const apps = kc.makeApiClient(AppsV1Api);
  const probe = { metadata: { name: probeName }, spec: { selector: { matchLabels: { app: probeName } }, template: { metadata: { labels: { app: probeName } }, spec: { containers: [{ name: "c", image: "x" }] } } } };
  await eventually("the hold webhook to be called", async () => {
    await apps.createNamespacedDeployment({ namespace, body: probe, dryRun: "All" });
    return probed || undefined;
  });

  return {
    held,
    get requests() {
      return requests;
    },
    async release() {
      await admission.deleteValidatingWebhookConfiguration({ name: configName });
      for (const answer of waiting.splice(0)) answer();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // The API server keeps its connections to the webhook open; answered, they are idle.
      server.closeIdleConnections();
      await closed;
    },
  };
}
