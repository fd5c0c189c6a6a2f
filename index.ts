// The install program (`npx appstack pulumi up` in this folder): wiring only. Every option is
// stack configuration with the default documented in Pulumi.yaml.
import * as pulumi from "@pulumi/pulumi";
import { AppstackInstall } from "./components/install.ts";

const config = new pulumi.Config("appstack");

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
});

export const namespace = install.namespace;
export const serviceAccount = install.serviceAccount;
export const deployment = install.deployment;
