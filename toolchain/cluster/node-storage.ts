// The real node's volume provisioner: rancher's local-path-provisioner (pinned in
// toolchain/local-path-provisioner), run as a process beside the cluster with the admin kubeconfig.
// It gives each claim a folder under the cluster folder, made and removed by a helper pod (busybox).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { CoreV1Api, StorageV1Api } from "@kubernetes/client-node";
import yaml from "js-yaml";
import { loadKubeConfig } from "./readiness.ts";

export const storageClassName = "local-path";
export const provisionerName = "rancher.io/local-path";
const namespace = "local-path-storage";
const configMapName = "local-path-config";
const serviceAccountName = "local-path-provisioner";

/** The provisioner's files (its volume folder, its helper pod) and its command-line arguments. */
export function provisionerArgs(nodeDir: string, volumesDir: string, kubeconfig: string, helperImage: string): string[] {
  const configFile = join(nodeDir, "local-path-config.json");
  const helperPodFile = join(nodeDir, "local-path-helper-pod.yaml");
  writeFileSync(configFile, JSON.stringify({ nodePathMap: [{ node: "DEFAULT_PATH_FOR_NON_LISTED_NODES", paths: [volumesDir] }] }));
  writeFileSync(helperPodFile, yaml.dump({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "helper-pod" },
    spec: {
      priorityClassName: "system-node-critical",
      containers: [{ name: "helper-pod", image: helperImage, imagePullPolicy: "Never" }],
    },
  }));
  return [
    "start", `--kubeconfig=${kubeconfig}`, `--config=${configFile}`, `--helper-pod-file=${helperPodFile}`,
    `--namespace=${namespace}`, `--configmap-name=${configMapName}`, `--service-account-name=${serviceAccountName}`,
    `--helper-image=${helperImage}`, `--provisioner-name=${provisionerName}`,
  ];
}

/**
 * What the provisioner reads from the cluster: its namespace and service account (its helper pods run
 * there), the setup and teardown scripts its helper pods mount, and the default StorageClass.
 */
export async function createStorageObjects(kubeconfig: string): Promise<void> {
  const kc = loadKubeConfig(kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: serviceAccountName } } });
  await core.createNamespacedConfigMap({
    namespace,
    body: {
      metadata: { name: configMapName },
      data: {
        setup: '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n',
        teardown: '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n',
      },
    },
  });
  await kc.makeApiClient(StorageV1Api).createStorageClass({
    body: {
      metadata: { name: storageClassName, annotations: { "storageclass.kubernetes.io/is-default-class": "true" } },
      provisioner: provisionerName,
      // The volume is made once the pod that uses it has a node, as upstream's manifest does.
      volumeBindingMode: "WaitForFirstConsumer",
      reclaimPolicy: "Delete",
    },
  });
}
