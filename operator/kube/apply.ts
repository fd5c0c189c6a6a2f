// Server-side apply of plain manifests (the CRDs, the samples), as `kubectl apply --server-side`.
import { readFileSync } from "node:fs";
import yaml from "js-yaml";
import { ApiextensionsV1Api, AuthenticationV1Api, KubernetesObjectApi, loadYaml, PatchStrategy, type KubernetesObject } from "@kubernetes/client-node";
import { setTimeout as sleep } from "node:timers/promises";
import { fieldManager } from "../../components/metadata.ts";
import { apiPolicies, customResourceDefinitions, kindGroups } from "../../components/kinds.ts";
import { approvalPolicy } from "../../crds/approval.ts";
import { shardLabelsPolicy } from "../../crds/shard-labels.ts";
import { apiClient, type KubeClients } from "./clients.ts";


/**
 * client-node serializes known kinds through its typed models, which read model property names
 * (`_default`), not JSON ones (`default`): passing plain JSON through its deserializer first keeps
 * every field.
 */
export async function applyObjects(clients: KubeClients, objects: readonly KubernetesObject[], manager = fieldManager): Promise<void> {
  const api = apiClient(clients.config, KubernetesObjectApi);
  for (const object of objects) {
    const typed = loadYaml<KubernetesObject>(JSON.stringify(object));
    await api.patch(typed, undefined, undefined, manager, true, PatchStrategy.ServerSideApply);
  }
}

export function readManifests(file: string): KubernetesObject[] {
  return (yaml.loadAll(readFileSync(file, "utf8")) as KubernetesObject[]).filter(Boolean);
}

/** The user the API server takes `clients` for (a SelfSubjectReview): a client certificate's common name, a token's ServiceAccount. */
export async function userOf(clients: KubeClients): Promise<string> {
  const review = await apiClient(clients.config, AuthenticationV1Api).createSelfSubjectReview({ body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" } });
  const user = review.status?.userInfo?.username;
  if (!user) throw new Error("the API server did not say which user these credentials are");
  return user;
}

export interface InstallApiOptions {
  readonly timeoutMs?: number;
  /**
   * Who may set the shard labels (crds/shard-labels.ts) and is never asked for the approve verb
   * (crds/approval.ts): by default the user of `clients`, the operator's own when it installs the
   * API itself (`npm start`).
   */
  readonly operatorUsers?: readonly string[];
}

/** Applies appstack's API (the CRDs and the admission policies) and waits until the API server serves the CRDs. */
export async function installApi(clients: KubeClients, { timeoutMs = 60_000, operatorUsers }: InstallApiOptions = {}): Promise<void> {
  const users = operatorUsers ?? [await userOf(clients)];
  await applyObjects(clients, [...customResourceDefinitions(), ...apiPolicies(), ...shardLabelsPolicy(users, kindGroups()), ...approvalPolicy(users, kindGroups())]);
  const api = apiClient(clients.config, ApiextensionsV1Api);
  const deadline = performance.now() + timeoutMs;
  for (const crd of customResourceDefinitions()) {
    for (;;) {
      const live = await api.readCustomResourceDefinition({ name: crd.metadata.name });
      if (live.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
      if (performance.now() > deadline) throw new Error(`CRD ${crd.metadata.name} not established after ${timeoutMs / 1000} s`);
      await sleep(200);
    }
  }
}
