// `appstack manifests [flags]`: the install as plain YAML, for `kubectl apply --server-side`,
// Kustomize, Argo CD or Flux, on a cluster that has neither this repository nor Pulumi. It is the
// install program itself (index.ts, the same component `appstack pulumi up` runs) on a throwaway
// stack whose Kubernetes provider renders to files instead of applying (the provider's
// renderYamlToDirectory): one source for both installs. The credentials are Secrets the user
// makes, referred to by name, so the output holds none.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { randomBytes } from "node:crypto";
import yaml from "js-yaml";
import { parseFlags, UsageError } from "./flags.ts";
import { runPulumiCli } from "./pulumi-cli.ts";
import { buildToolchain } from "../../toolchain/build.ts";
import { pulumiTools, repoRoot, type ToolName } from "../../toolchain/tools.ts";
import { buildVersion } from "../manager/build-info.ts";

export const manifestsUsage = `usage: appstack manifests --passphrase-secret NAME [flags] [-o FILE]
  the install (CRDs, namespace, RBAC, policies, storage, the operator Deployment) as YAML, on stdout
  or in FILE; apply it with kubectl apply --server-side -f FILE. Each flag is the install option of
  the same name (docs/configuration.md):
  --passphrase-secret NAME     a Secret you make in the operator's namespace, key passphrase (required)
  --backend-secret NAME        a Secret you make there, key backendUrl: a postgres:// URL (default: a file backend on a volume)
  --backend-ca-secret NAME     a Secret there, key ca.crt: the CA bundle of the database's server (sslmode verify-full unless the URL names one)
  --namespace NS  --image IMAGE  --replicas N  --watch-namespaces NS,NS  --parallelism N
  --storage-size SIZE  --pod-start-timeout-seconds N  --object-metrics true|false
  --service-monitor true|false  a metrics Service and a Prometheus operator ServiceMonitor (its CRD must exist)
  --prometheus-rule true|false  a Prometheus operator PrometheusRule with appstack's alerts (its CRD must exist; docs/runbook.md)
  --metrics-cert-secret NAME   a kubernetes.io/tls Secret there for the HTTPS metrics server (default: self-signed, made at start)
  --network-policy true|false   a NetworkPolicy for the operator's pods: egress to DNS, the API server and the database, ingress to /metrics
  --default-service-account NAME  tenant identities: children written as each object's ServiceAccount (docs/security.md)
  --kinds DIR                  a folder of kind files: their CRDs, RBAC and policies too; the operator's image must hold
                               the same files in /app/kinds (docs/writing-a-kind.md)
  It needs a clone of this repository with npm ci done, and Go (README.md#prerequisites): it first builds,
  once, into the cache, the Pulumi CLI (or uses a pulumi on PATH at the pinned version), its Node.js
  language host and the Kubernetes provider, and no other tool (cold: minutes,
  docs/measurements.md#toolchain-build-times-and-disk). It needs no cluster and no credentials.
  Without any of that: deploy/appstack.yaml is this command's output with default settings.`;

/** Each flag and the install option (`appstack:<key>`) it sets. */
export const manifestsOptions = {
  "passphrase-secret": "passphraseSecret",
  "backend-secret": "backendSecret",
  "backend-ca-secret": "backendCaSecret",
  namespace: "namespace",
  image: "image",
  replicas: "replicas",
  "watch-namespaces": "watchNamespaces",
  parallelism: "parallelism",
  "storage-size": "storageSize",
  "pod-start-timeout-seconds": "podStartTimeoutSeconds",
  "object-metrics": "objectMetrics",
  "service-monitor": "serviceMonitor",
  "prometheus-rule": "prometheusRule",
  "metrics-cert-secret": "metricsCertSecret",
  "network-policy": "networkPolicy",
  "default-service-account": "defaultServiceAccount",
  kinds: "kinds",
} as const;

/** The flags it parses: the install options', and -o FILE. */
export const manifestsFlags = {
  ...(Object.fromEntries(Object.keys(manifestsOptions).map((flag) => [flag, { type: "string" }])) as Record<keyof typeof manifestsOptions, { type: "string" }>),
  output: { type: "string", short: "o" },
} as const;

/** The order kubectl must meet them in: a namespace before what lives in it, a CRD before its objects. */
const kindOrder = ["CustomResourceDefinition", "Namespace", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "PersistentVolumeClaim", "Service", "Deployment", "NetworkPolicy", "ServiceMonitor", "PrometheusRule"];

/** What the command does besides parsing and writing: a test observes the one and stands in for the other. */
export interface ManifestsSteps {
  /** Builds the named tools that are not cached yet (toolchain/build.ts). */
  readonly build: (tools: readonly ToolName[]) => void;
  /** The install's documents for these settings, in the order kubectl needs. */
  readonly render: (settings: Setting[]) => Promise<string[]>;
}

// Its log on stderr, as for `pulumi`: the YAML alone goes to stdout.
const defaultSteps: ManifestsSteps = { build: (tools) => buildToolchain(undefined, tools), render };

export async function runManifestsCli(argv: readonly string[], steps: ManifestsSteps = defaultSteps): Promise<number> {
  const flags = parseFlags(argv, manifestsFlags, manifestsUsage);
  if (!flags["passphrase-secret"]) throw new UsageError(`appstack manifests: --passphrase-secret is required: the rendered install holds no passphrase\n${manifestsUsage}`);
  const settings = installSettings(flags);
  // The engine and the program's host only: rendering starts no cluster.
  steps.build(pulumiTools);
  const documents = await steps.render(settings);
  // The command line again, but where the output went.
  const shown = argv.filter((arg, index) => !["-o", "--output"].includes(arg) && !["-o", "--output"].includes(argv[index - 1] ?? "") && !arg.startsWith("--output="));
  const text = header(shown, flags) + documents.join("---\n");
  if (flags.output) writeFileSync(flags.output, text);
  else process.stdout.write(text);
  return 0;
}

/** What the file is and what it needs, for the person who applies it later. */
function header(shown: readonly string[], flags: Partial<Record<keyof typeof manifestsOptions, string>>): string {
  const namespace = flags.namespace ?? "appstack-system";
  const secrets = [`${flags["passphrase-secret"]} (key passphrase)`, ...(flags["backend-secret"] ? [`${flags["backend-secret"]} (key backendUrl: a postgres:// URL)`] : []), ...(flags["backend-ca-secret"] ? [`${flags["backend-ca-secret"]} (key ca.crt)`] : []), ...(flags["metrics-cert-secret"] ? [`${flags["metrics-cert-secret"]} (type kubernetes.io/tls)`] : [])];
  return [
    `# appstack ${buildVersion()}: the install, rendered by \`appstack manifests ${shown.join(" ")}\`.`,
    `# It refers to Secrets you make in namespace ${namespace}: ${secrets.join(", ")}.`,
    "# Apply with: kubectl apply --server-side -f <this file>",
    "",
  ].join("\n");
}

/** One `pulumi config set`: a key (a path into a list with `path`) and its value. */
export interface Setting {
  readonly key: string;
  readonly value: string;
  readonly path?: boolean;
}

/** The stack configuration (`appstack:<key>` and its value) the flags ask for. */
export function installSettings(flags: Partial<Record<keyof typeof manifestsOptions, string>>): Setting[] {
  return (Object.entries(manifestsOptions) as [keyof typeof manifestsOptions, string][]).flatMap(([flag, key]): Setting[] => {
    const value = flags[flag];
    if (value === undefined) return [];
    // A list, item by item, as `pulumi config set --path` takes it.
    if (flag === "watch-namespaces") return value.split(",").filter(Boolean).map((item, index) => ({ key: `appstack:${key}[${index}]`, value: item, path: true }));
    // The program runs in a folder of its own: a folder given relative to here is made absolute.
    if (flag === "kinds") return [{ key: `appstack:${key}`, value: resolve(value) }];
    return [{ key: `appstack:${key}`, value }];
  });
}

/** Runs the install program on a throwaway stack in a folder of its own, its provider rendering into files. */
async function render(settings: Setting[]): Promise<string[]> {
  const folder = mkdtempSync(join(tmpdir(), "appstack-manifests-"));
  const rendered = join(folder, "rendered");
  // The throwaway stack's own backend, home and passphrase: nothing of the person's Pulumi setup is read or written.
  const env = { PULUMI_BACKEND_URL: `file://${folder}`, PULUMI_HOME: join(folder, "home"), PULUMI_CONFIG_PASSPHRASE: randomBytes(16).toString("hex") };
  // The project in the folder, its program the repository's: the throwaway stack's configuration
  // (Pulumi.manifests.yaml) lands there, not beside the program.
  writeFileSync(join(folder, "Pulumi.yaml"), `${readFileSync(join(repoRoot, "Pulumi.yaml"), "utf8")}\nmain: ${relative(folder, repoRoot)}\n`);
  const stack = ["--cwd", folder, "--stack", "manifests", "--non-interactive"];
  const pulumi = async (...args: string[]) => {
    const code = await runPulumiCli([...args, ...stack], { env, stdout: "stderr" });
    if (code !== 0) throw new Error(`appstack manifests: pulumi ${args[0]} failed (exit ${code}); its output is above`);
  };
  try {
    await pulumi("stack", "init");
    for (const { key, value, path } of [...settings, { key: "kubernetes:renderYamlToDirectory", value: rendered }]) {
      await pulumi("config", "set", "--plaintext", key, value, ...(path ? ["--path"] : []));
    }
    await pulumi("up", "--yes", "--skip-preview");
    return readRendered(rendered);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** The provider's files (0-crd/, 1-manifest/), in the order kubectl must apply them, each a YAML document. */
function readRendered(folder: string): string[] {
  const documents = ["0-crd", "1-manifest"].flatMap((part) => readdirSync(join(folder, part)).sort().map((file) => readFileSync(join(folder, part, file), "utf8")));
  const rank = (text: string) => {
    const kind = (yaml.load(text) as { kind?: string }).kind ?? "";
    const index = kindOrder.indexOf(kind);
    // A kind not listed goes last, where everything it may need exists.
    return index === -1 ? kindOrder.length : index;
  };
  return documents.map((text) => ({ text, rank: rank(text) })).sort((a, b) => a.rank - b.rank).map(({ text }) => text);
}
