// The kubeconfig an engine's Kubernetes provider acts as a tenant's ServiceAccount with
// (controller/tenancy.ts): the operator's own connection, with `as: <user>`, which client-go (and
// so the provider) sends as Kubernetes impersonation. It names the operator's credentials by
// reference only (the token file Kubernetes projects into the pod, or the files and exec plugin a
// kubeconfig names), never their contents: the file the engine reads holds no credential, and
// neither does the stack's state (the provider's inputs name no kubeconfig: pulumi/programs.ts).
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import yaml from "js-yaml";

/** Where Kubernetes projects a pod's ServiceAccount credentials (client-go's in-cluster config reads the same). */
const serviceAccountFolder = "/var/run/secrets/kubernetes.io/serviceaccount";

type Entry = Record<string, unknown>;

/** The operator's connection, credentials by reference: a kubeconfig's cluster and user entries, without `as`. */
export interface EngineConnection {
  readonly cluster: Entry;
  readonly user: Entry;
}

/** Embedded credentials: what a kubeconfig for the engines may not copy. */
const embedded = ["token", "client-key-data", "client-certificate-data", "password", "username", "auth-provider"];

/** Paths a kubeconfig entry names, relative to the kubeconfig's own folder. */
const clusterPaths = ["certificate-authority"];
const userPaths = ["client-certificate", "client-key", "tokenFile"];

function absolute(entry: Entry, keys: readonly string[], folder: string): Entry {
  const out: Entry = { ...entry };
  for (const key of keys) {
    const value = out[key];
    if (typeof value === "string" && value && !isAbsolute(value)) out[key] = resolve(folder, value);
  }
  return out;
}

function named(list: unknown, name: unknown, what: string, file: string): Entry {
  const found = Array.isArray(list) ? (list as Entry[]).find((item) => item?.["name"] === name) : undefined;
  const entry = found?.[what === "context" ? "context" : what];
  if (!entry || typeof entry !== "object") throw new Error(`the kubeconfig ${file} has no ${what} ${JSON.stringify(name)}`);
  return entry as Entry;
}

/**
 * The connection a kubeconfig file's current context describes. Its user must name its
 * credentials by reference (`tokenFile`, client-node's `token-file`, `client-certificate` with
 * `client-key`, or an `exec` plugin): one with a token or key written into the file is refused.
 */
export function connectionFromKubeconfig(file: string, text = readFileSync(file, "utf8")): EngineConnection {
  const doc = (yaml.load(text) ?? {}) as Entry;
  const context = named(doc["contexts"], doc["current-context"], "context", file);
  const folder = dirname(file);
  const cluster = absolute(named(doc["clusters"], context["cluster"], "cluster", file), clusterPaths, folder);
  const raw = named(doc["users"], context["user"], "user", file);
  const found = embedded.filter((key) => raw[key] !== undefined && raw[key] !== "");
  if (found.length) {
    throw new Error(`tenant identities need the operator's credentials by reference, so that no file the engines read holds one: the kubeconfig ${file} has ${found.join(", ")} in user ${JSON.stringify(context["user"])}; name a token file (tokenFile), client-certificate and client-key files, or an exec plugin instead (in a pod, the ServiceAccount's token is one)`);
  }
  const { "token-file": tokenFile, as: _as, "as-groups": _groups, "as-uid": _uid, "as-user-extra": _extra, ...user } = raw;
  return { cluster, user: absolute({ ...user, ...(typeof tokenFile === "string" && !user["tokenFile"] ? { tokenFile } : {}) }, userPaths, folder) };
}

/** The connection of a pod's own ServiceAccount: the token and CA files Kubernetes projects, and the Service's address. */
export function inClusterConnection(env: Record<string, string | undefined> = process.env): EngineConnection {
  const host = env["KUBERNETES_SERVICE_HOST"];
  const port = env["KUBERNETES_SERVICE_PORT"];
  if (!host || !port) throw new Error("not in a pod (no KUBERNETES_SERVICE_HOST): give a kubeconfig");
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
  return { cluster: { server, "certificate-authority": join(serviceAccountFolder, "ca.crt") }, user: { tokenFile: join(serviceAccountFolder, "token") } };
}

/** The operator's connection as client-node's loadFromDefault finds it: the kubeconfig given, else in the pod, else ~/.kube/config. */
export function operatorConnection(kubeconfig: string | undefined, env: Record<string, string | undefined> = process.env): EngineConnection {
  if (kubeconfig) return connectionFromKubeconfig(kubeconfig);
  if (env["KUBERNETES_SERVICE_HOST"] && existsSync(join(serviceAccountFolder, "token"))) return inClusterConnection(env);
  return connectionFromKubeconfig(join(homedir(), ".kube", "config"));
}

/** A kubeconfig of `connection` acting as `user` (a ServiceAccount's: the API server adds its groups). */
export function impersonatingKubeconfig(connection: EngineConnection, user: string): string {
  return yaml.dump({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "appstack", cluster: connection.cluster }],
    users: [{ name: "appstack-tenant", user: { ...connection.user, as: user } }],
    contexts: [{ name: "appstack-tenant", context: { cluster: "appstack", user: "appstack-tenant" } }],
    "current-context": "appstack-tenant",
  }, { lineWidth: -1 });
}
