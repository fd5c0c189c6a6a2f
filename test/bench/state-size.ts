// What the operator's state costs at scale: its folder's size on disk, the rows and bytes of a
// PostgreSQL backend's table, and the time of the pinned Pulumi CLI's `stack ls` against its
// backend (the command a person runs through `appstack stacks`, operator/cmd/stacks-cli.ts, with
// the engines' home and workspace).
import { spawnSync } from "node:child_process";
import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { processStat } from "../../operator/base/procfs.ts";
import { engineFolders } from "../../operator/manager/config.ts";
import { postgresLocation } from "../../operator/pulumi/postgres-store.ts";
import { toolPath } from "../../toolchain/tools.ts";

export interface FolderSize {
  /** The files' sizes added up. */
  readonly bytes: number;
  /** The blocks they take on disk. */
  readonly diskBytes: number;
  readonly files: number;
}

export function folderSize(dir: string): FolderSize {
  let bytes = 0;
  let diskBytes = 0;
  let files = 0;
  const walk = (path: string) => {
    const stat = lstatSync(path);
    diskBytes += stat.blocks * 512;
    if (stat.isDirectory()) for (const entry of readdirSync(path)) walk(join(path, entry));
    else {
      bytes += stat.size;
      files++;
    }
  };
  walk(dir);
  return { bytes, diskBytes, files };
}

export interface StackLs {
  /** Wall-clock seconds of each run, sorted. */
  readonly seconds: number[];
  /** CPU seconds of each run (the CLI and anything it started), in the same order as run. */
  readonly cpuSeconds: number[];
  readonly stacks: number;
}

/** This process's reaped children's CPU seconds: a child run by spawnSync is reaped when it returns. */
function childrenCpuSeconds(): number {
  const fields = processStat(process.pid)?.fields ?? [];
  return (Number(fields[13] ?? 0) + Number(fields[14] ?? 0)) / 100;
}

/**
 * On a `postgres://` backend, `stack ls` of the pinned CLI (v3.259.0) reading its default of 10
 * stacks at once never ended once there were 5 stacks or more (tried by hand: 4 at once hung at 5
 * stacks; 1, 2 and 3 at once listed them in 0.2 s); so it reads one at a time here.
 */
export const postgresListEnv = { PULUMI_DIY_BACKEND_PARALLEL: "1" };

/** `pulumi stack ls --json` against `backendUrl` (by default the operator's local backend in `stateDir`), `runs` times. */
export function stackLsSeconds(stateDir: string, passphrase: string, runs: number, backendUrl?: string): StackLs {
  const { pulumiHome, workDir } = engineFolders(stateDir);
  const backend = backendUrl ? { PULUMI_BACKEND_URL: backendUrl, ...postgresListEnv } : { PULUMI_BACKEND_URL: pathToFileURL(join(stateDir, "backend")).href };
  const env = { ...process.env, PULUMI_HOME: pulumiHome, ...backend, PULUMI_CONFIG_PASSPHRASE: passphrase, PULUMI_SKIP_UPDATE_CHECK: "true" };
  const seconds: number[] = [];
  const cpuSeconds: number[] = [];
  let stacks = 0;
  for (let i = 0; i < runs; i++) {
    const cpuBefore = childrenCpuSeconds();
    const started = Date.now();
    const result = spawnSync(toolPath("pulumi"), ["stack", "ls", "--json", "--non-interactive"], { cwd: workDir, env, encoding: "utf8", timeout: 600_000, maxBuffer: 64 * 2 ** 20 });
    seconds.push((Date.now() - started) / 1000);
    cpuSeconds.push(childrenCpuSeconds() - cpuBefore);
    if (result.status !== 0) throw new Error(`pulumi stack ls failed (${result.status ?? result.signal}): ${result.stderr}`);
    stacks = (JSON.parse(result.stdout) as unknown[]).length;
  }
  return { seconds: seconds.sort((a, b) => a - b), cpuSeconds, stacks };
}

export interface TableSize {
  /** Rows under the backend's key prefix (operator/pulumi/postgres-store.ts). */
  readonly rows: number;
  /** The table with its indexes and TOAST (pg_total_relation_size): what the database keeps on disk for it. */
  readonly bytes: number;
}

/** Pulumi's table on a `postgres://` backend: its rows for this backend and its size. */
export async function postgresBackendSize(backendUrl: string): Promise<TableSize> {
  const { connectionString, table, prefix } = postgresLocation(backendUrl);
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 15_000, query_timeout: 60_000 });
  await client.connect();
  try {
    const [count] = (await client.query<{ rows: string }>(`SELECT count(*) AS rows FROM ${table} WHERE starts_with(key, $1)`, [prefix])).rows;
    const [size] = (await client.query<{ bytes: string }>("SELECT pg_total_relation_size($1::regclass) AS bytes", [table])).rows;
    return { rows: Number(count?.rows ?? 0), bytes: Number(size?.bytes ?? 0) };
  } finally {
    await client.end();
  }
}
