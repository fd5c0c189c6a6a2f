// A mutating admission webhook, as sidecar injectors and policy engines are: it adds an env var to
// the first container of the Deployments of one name on every create and update, whoever writes
// them. What it adds is the cluster's, never drift.
import type { V1Deployment } from "@kubernetes/client-node";
import { instanceLabel } from "../../components/metadata.ts";
import type { LocalCluster } from "../../toolchain/cluster/cluster.ts";
import { serveAdmission } from "./admission-server.ts";

export interface Injector {
  /** Removes the webhook and stops its server. */
  remove(): Promise<void>;
}

interface AdmissionRequest {
  uid: string;
  name?: string;
  object?: V1Deployment;
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
  const probeName = `${name}-inject-probe`;
  const webhook = await serveAdmission<AdmissionRequest>(
    local,
    {
      purpose: "inject",
      kind: "mutating",
      configName: `appstack-test-inject-${name}`,
      namespace,
      // Its failure is ignored, as every test webhook's is: a test checks the injection.
      timeoutSeconds: 10,
      objectSelector: { matchLabels: { [instanceLabel]: name } },
      rules: [{ apiGroups: ["apps"], apiVersions: ["v1"], resources: ["deployments"], operations: ["CREATE", "UPDATE"], scope: "Namespaced" }],
      // Called is not enough: the probe must come back with `env` in it.
      probe: { name: probeName, labels: { [instanceLabel]: name }, answered: (created) => created.spec?.template.spec?.containers[0]?.env?.some((e) => e.name === env.name) ?? false },
    },
    (request, answer) => {
      const patch = request.name === name || request.name === probeName ? injection(request.object, env) : [];
      answer({ allowed: true, ...(patch.length ? { patchType: "JSONPatch", patch: Buffer.from(JSON.stringify(patch)).toString("base64") } : {}) });
    },
  );
  return {
    async remove() {
      await webhook.unregister();
      await webhook.close();
    },
  };
}
