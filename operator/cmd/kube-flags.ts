// kubectl's flags, where they apply to appstack's commands (`kubectl appstack status -A -o json`):
// -n/--namespace, -A/--all-namespaces, --context, --kubeconfig, --as, -o/--output json|yaml, and an
// object named as kubectl names it (`app/web`, `apps/web`, `memcached.appstack.dev/cache`).
import { KubeConfig } from "@kubernetes/client-node";
import yaml from "js-yaml";
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import type { WorkloadKind } from "../../crds/types.ts";
import { kindNamed, workloadKinds } from "../../components/kinds.ts";
import { ChildObjectApi } from "../kube/child-apis.ts";
import { inWords } from "../../crds/spec-fields.ts";
import { apiClient, briefError, type KubeClients } from "../kube/clients.ts";
import { UsageError } from "./flags.ts";

export const kubeOptions = {
  namespace: { type: "string", short: "n" },
  "all-namespaces": { type: "boolean", short: "A" },
  context: { type: "string" },
  kubeconfig: { type: "string" },
  as: { type: "string" },
  output: { type: "string", short: "o" },
} as const;

export const kubeFlagsUsage = `  -n, --namespace=NS  -A, --all-namespaces  --context=NAME  --kubeconfig=PATH  --as=USER  -o, --output=json|yaml`;

export interface KubeFlags {
  readonly namespace?: string;
  readonly "all-namespaces"?: boolean;
  readonly context?: string;
  readonly kubeconfig?: string;
  /** Act as this user (the Impersonate-User header), as kubectl --as: RBAC judges that user's rights. */
  readonly as?: string;
  readonly output?: string;
}

export type OutputFormat = "table" | "json" | "yaml";

export function outputFormat(flags: KubeFlags, usage: string): OutputFormat {
  const output = flags.output ?? "table";
  if (output === "table" || output === "json" || output === "yaml") return output;
  throw new UsageError(`unknown output format ${JSON.stringify(output)}: use -o json or -o yaml\n${usage}`);
}

/** Data as -o json or -o yaml prints it. */
export function printData(format: Exclude<OutputFormat, "table">, data: unknown): string {
  return format === "json" ? JSON.stringify(data, null, 2) + "\n" : yaml.dump(data, { noRefs: true, lineWidth: -1 });
}

/** The kubeconfig as kubectl reads it: --kubeconfig, else KUBECONFIG or ~/.kube/config; --context over its current context; --as the user it acts as. */
export function kubeConfigOf(flags: KubeFlags): KubeConfig {
  const config = new KubeConfig();
  if (flags.kubeconfig) config.loadFromFile(flags.kubeconfig);
  else config.loadFromDefault();
  if (flags.context) {
    if (!config.getContextObject(flags.context)) throw new UsageError(`the kubeconfig has no context ${JSON.stringify(flags.context)}`);
    config.setCurrentContext(flags.context);
  }
  const as = flags.as;
  if (as !== undefined) {
    const user = config.getCurrentUser();
    if (!user) throw new UsageError("--as needs a current user in the kubeconfig to act from");
    config.users = config.users.map((each) => (each.name === user.name ? { ...each, impersonateUser: as } : each));
  }
  return config;
}

export function cliClients(flags: KubeFlags): KubeClients {
  const config = kubeConfigOf(flags);
  return { config, core: apiClient(config, CoreV1Api), apps: apiClient(config, AppsV1Api), custom: apiClient(config, CustomObjectsApi), objects: apiClient(config, ChildObjectApi) };
}

/** -n, else the context's namespace, else default (as kubectl). */
export function namespaceOf(flags: KubeFlags, config: KubeConfig): string {
  return flags.namespace ?? config.getContextObject(config.getCurrentContext())?.namespace ?? "default";
}

/** How a person names one object of each kind: app/NAME. */
const objectRefs = workloadKinds().map((kind) => `${kind.toLowerCase()}/NAME`);

/** How a usage text names one object: `app/NAME|memcached/NAME`, one per kind. */
export const objectRefUsage = objectRefs.join("|");

/** The kinds in words, joined by `conjunction`: "App and Memcached". */
export const kindsInWords = (conjunction: "and" | "or"): string => inWords(workloadKinds(), conjunction);

/** `app/web` (as kubectl writes it) to its kind and name. */
export function parseObjectRef(text: string | undefined, usage: string): { kind: WorkloadKind; name: string } {
  const [type, name, extra] = (text ?? "").split("/");
  const kind = kindNamed(type ?? "");
  if (!kind || !name || extra !== undefined) throw new UsageError(`name one object as ${objectRefs.join(" or ")}${text ? `, not ${JSON.stringify(text)}` : ""}\n${usage}`);
  return { kind, name };
}

/** An error as a command prints it: the API server's refusal in its own words (403: who may not do what), else the whole message. */
export function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return /HTTP-Code: \d+/.test(text) ? briefError(error) : text;
}
