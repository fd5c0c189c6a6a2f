// Operator settings, from the environment (as a Deployment sets them) with flags on top.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir, hostname } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Level } from "./log.ts";

export interface OperatorConfig {
  readonly kubeconfig?: string;
  /** Namespaces to watch; "all" for the whole cluster. */
  readonly namespaces: readonly string[] | "all";
  /** Objects reconciled at once (each runs its own Pulumi engine). */
  readonly concurrency: number;
  readonly stateDir: string;
  readonly backendUrl: string;
  readonly passphrase: string;
  readonly logLevel: Level;
  readonly logFormat: "json" | "text";
  readonly baseRetryMs: number;
  readonly maxRetryMs: number;
  /** Where /healthz, /readyz and /metrics listen. */
  readonly healthHost: string;
  readonly healthPort: number;
  /** The Lease that elects one reconciling replica; undefined runs without election. */
  readonly leaderElection?: { readonly namespace: string; readonly name: string; readonly identity: string };
  /** How long a SIGTERM waits for running Pulumi operations before the process exits anyway. */
  readonly shutdownGraceMs: number;
  /** How long one Pulumi operation may take before it is cancelled. */
  readonly operationTimeoutMs: number;
  /** How often every object is re-checked against its live children, events or not (controller-runtime's SyncPeriod). */
  readonly resyncMs: number;
}

type Env = Record<string, string | undefined>;

function flag(argv: readonly string[], name: string): string | undefined {
  const prefix = `--${name}=`;
  return argv.find((arg) => arg.startsWith(prefix))?.slice(prefix.length);
}

function positiveInt(text: string | undefined, fallback: number, what: string): number {
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${what} must be a positive integer, not ${JSON.stringify(text)}`);
  return value;
}

/**
 * The passphrase for stack secrets. A local file backend may keep a generated one beside its
 * state; any other backend must be given one, or its secrets could not be read after a restart.
 */
function passphrase(env: Env, stateDir: string, localBackend: boolean): string {
  const given = env["APPSTACK_PASSPHRASE"] ?? env["PULUMI_CONFIG_PASSPHRASE"];
  if (given) return given;
  if (!localBackend) throw new Error("set APPSTACK_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE) to encrypt stack secrets");
  const file = join(stateDir, "passphrase");
  if (!existsSync(file)) writeFileSync(file, randomBytes(24).toString("base64url"), { mode: 0o600 });
  return readFileSync(file, "utf8").trim();
}

const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/** host:port; an empty host means all interfaces, as in Go's flag convention. */
function healthAddress(text: string): { healthHost: string; healthPort: number } {
  const match = /^(.*):(\d+)$/.exec(text);
  if (!match) throw new Error(`health address must be host:port, not ${JSON.stringify(text)}`);
  return { healthHost: match[1] || "0.0.0.0", healthPort: Number(match[2]) };
}

function leaderElection(argv: readonly string[], env: Env): OperatorConfig["leaderElection"] {
  const enabled = (setting(argv, env, "leader-elect", "APPSTACK_LEADER_ELECT") ?? "true") !== "false";
  if (!enabled) return undefined;
  const inCluster = existsSync(serviceAccountNamespaceFile) ? readFileSync(serviceAccountNamespaceFile, "utf8").trim() : undefined;
  return {
    namespace: env["APPSTACK_LEASE_NAMESPACE"] ?? inCluster ?? "default",
    name: env["APPSTACK_LEASE_NAME"] ?? "appstack-operator",
    identity: `${env["POD_NAME"] ?? hostname()}_${randomBytes(4).toString("hex")}`,
  };
}

/** A flag (`--name=value`) wins over its environment variable. */
function setting(argv: readonly string[], env: Env, name: string, variable: string): string | undefined {
  return flag(argv, name) ?? env[variable];
}

/** Where stack state lives and how its secrets are encrypted. */
function storage(argv: readonly string[], env: Env): Pick<OperatorConfig, "stateDir" | "backendUrl" | "passphrase"> {
  const stateDir = setting(argv, env, "state-dir", "APPSTACK_STATE_DIR") ?? join(env["XDG_STATE_HOME"] ?? join(homedir(), ".local", "state"), "appstack");
  mkdirSync(stateDir, { recursive: true });
  const givenBackend = setting(argv, env, "backend-url", "APPSTACK_BACKEND_URL");
  if (givenBackend) return { stateDir, backendUrl: givenBackend, passphrase: passphrase(env, stateDir, false) };
  mkdirSync(join(stateDir, "backend"), { recursive: true });
  return { stateDir, backendUrl: pathToFileURL(join(stateDir, "backend")).href, passphrase: passphrase(env, stateDir, true) };
}

function logLevel(text: string): Level {
  if (text === "debug" || text === "info" || text === "warn" || text === "error") return text;
  throw new Error(`unknown log level ${text}`);
}

export function loadConfig(argv: readonly string[], env: Env = process.env): OperatorConfig {
  const namespaces = (setting(argv, env, "namespaces", "APPSTACK_NAMESPACES") ?? "").split(",").map((ns) => ns.trim()).filter(Boolean);
  return {
    kubeconfig: setting(argv, env, "kubeconfig", "KUBECONFIG"),
    namespaces: namespaces.length ? namespaces : "all",
    concurrency: positiveInt(setting(argv, env, "concurrency", "APPSTACK_CONCURRENCY"), 3, "concurrency"),
    ...storage(argv, env),
    logLevel: logLevel(setting(argv, env, "log-level", "APPSTACK_LOG_LEVEL") ?? "info"),
    logFormat: setting(argv, env, "log-format", "APPSTACK_LOG_FORMAT") === "text" ? "text" : "json",
    baseRetryMs: positiveInt(env["APPSTACK_RETRY_BASE_MS"], 2_000, "APPSTACK_RETRY_BASE_MS"),
    maxRetryMs: positiveInt(env["APPSTACK_RETRY_MAX_MS"], 300_000, "APPSTACK_RETRY_MAX_MS"),
    ...healthAddress(setting(argv, env, "health-addr", "APPSTACK_HEALTH_ADDR") ?? "127.0.0.1:8081"),
    leaderElection: leaderElection(argv, env),
    shutdownGraceMs: positiveInt(env["APPSTACK_SHUTDOWN_GRACE_SECONDS"], 60, "APPSTACK_SHUTDOWN_GRACE_SECONDS") * 1000,
    operationTimeoutMs: positiveInt(setting(argv, env, "operation-timeout-seconds", "APPSTACK_OPERATION_TIMEOUT_SECONDS"), 300, "operation timeout") * 1000,
    // Flux's default interval. The check reads only the watch caches and starts no Pulumi process,
    // so it is cheap; it is the backstop for a change no watch event announced.
    resyncMs: positiveInt(setting(argv, env, "resync-seconds", "APPSTACK_RESYNC_SECONDS"), 600, "resync period") * 1000,
  };
}
