// The install program (`npx appstack pulumi up` in this folder): wiring only. Every option is
// stack configuration with the default documented in Pulumi.yaml. The kind files of appstack:kinds
// are loaded first (a file that fails stops the install, naming it): the install's CRDs, RBAC and
// policies are derived from every kind, so the component is imported once they are registered.
import * as pulumi from "@pulumi/pulumi";
import { kindFilesRefusal, loadKindFolder } from "./components/kind-files.ts";

const config = new pulumi.Config("appstack");
const kinds = config.get("kinds") || undefined;
if (kinds) {
  const refusal = kindFilesRefusal(await loadKindFolder(kinds));
  if (refusal) throw refusal;
}
const { AppstackInstall } = await import("./components/install.ts");

const install = new AppstackInstall("appstack", {
  namespace: config.get("namespace"),
  image: config.get("image"),
  replicas: config.getNumber("replicas"),
  watchNamespaces: config.getObject<string[]>("watchNamespaces"),
  excludedNamespaces: config.getObject<string[]>("excludedNamespaces"),
  // A postgres:// URL carries its password (`pulumi config set --secret`): the component makes it a
  // secret again. Read plain because its scheme decides what the install may do (more than one
  // replica only on PostgreSQL), which must be known at preview. Empty (the default) keeps the file backend.
  backendUrl: config.get("backendUrl") || undefined,
  backendSecret: config.get("backendSecret") || undefined,
  backendCaSecret: config.get("backendCaSecret") || undefined,
  parallelism: config.getNumber("parallelism"),
  podStartTimeoutSeconds: config.getNumber("podStartTimeoutSeconds"),
  storageSize: config.get("storageSize"),
  resources: config.getObject("resources"),
  // One of the two (the component says so otherwise): the passphrase itself, or a Secret of the user's holding it.
  passphrase: config.getSecret("passphrase"),
  passphraseSecret: config.get("passphraseSecret") || undefined,
  objectMetrics: config.getBoolean("objectMetrics"),
  serviceMonitor: config.getBoolean("serviceMonitor"),
  prometheusRule: config.getBoolean("prometheusRule"),
  metricsCertSecret: config.get("metricsCertSecret") || undefined,
  defaultServiceAccount: config.get("defaultServiceAccount") || undefined,
  networkPolicy: config.getBoolean("networkPolicy"),
  kinds,
});

export const namespace = install.namespace;
export const serviceAccount = install.serviceAccount;
export const deployment = install.deployment;
