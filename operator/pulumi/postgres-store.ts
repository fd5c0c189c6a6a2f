// Pulumi's `postgres://` DIY backend (pkg/backend/diy/postgres, bucket.go in Pulumi v3.259.0),
// read and written as Pulumi does: one table (`pulumi_state`, or the URL's `?table=`) of rows
// (key TEXT primary key, data JSON `{"data": "<base64 of the blob>"}`, updated_at). Pulumi prefixes
// every key with the URL's path (the database name: `postgres://.../appstack` keeps
// `appstack/.pulumi/stacks/...`), as it does for any bucket URL. Every query has a deadline: the
// connection's (connectionTimeoutMillis), the client's (query_timeout) and the server's
// (statement_timeout). One small pool per URL and process. TLS as Pulumi's driver reads the URL
// (postgres-tls.ts).
import pg from "pg";
import { redactUrl } from "../base/redact.ts";
import { describeVerification, isUnverifiedCertificate, nodePgTls, postgresTls, unverifiedReason, withoutTlsParameters, type PostgresTls } from "./postgres-tls.ts";
import type { StateStore } from "./state-store.ts";

/** The table Pulumi uses unless the URL names one. */
export const defaultStateTable = "pulumi_state";

/** What Pulumi's bucket.go reads as a table name is spliced into its SQL: here only a plain (optionally schema-qualified) name is. */
const tableName = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;

/** PostgreSQL's "undefined_table": no engine has written to this backend yet. */
const undefinedTable = "42P01";

interface Row {
  readonly key: string;
}

/** What Pulumi's driver does with a URL: the table and the key prefix out of it, the rest to the database driver. */
export function postgresLocation(backendUrl: string): { connectionString: string; table: string; prefix: string } {
  const url = new URL(backendUrl);
  const table = url.searchParams.get("table") || defaultStateTable;
  if (!tableName.test(table)) throw new Error(`the backend's table ${JSON.stringify(table)} is not a plain table name`);
  url.searchParams.delete("table");
  const path = url.pathname.replace(/^\/+/, "");
  return { connectionString: url.href, table, prefix: path ? `${decodeURIComponent(path).replace(/\/?$/, "/")}` : "" };
}

/** `text` as a LIKE pattern that matches only itself. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

const pools = new Map<string, pg.Pool>();

function poolFor(connectionString: string, tls: PostgresTls, deadlineMs: number): pg.Pool {
  const id = `${deadlineMs} ${connectionString}`;
  const kept = pools.get(id);
  if (kept) return kept;
  const pool = new pg.Pool({
    connectionString: withoutTlsParameters(connectionString),
    ...nodePgTls(tls),
    max: 2,
    connectionTimeoutMillis: deadlineMs,
    query_timeout: deadlineMs,
    statement_timeout: deadlineMs,
    idleTimeoutMillis: 10_000,
    // A command-line tool (appstack history) exits once done; its idle connections do not hold it.
    allowExitOnIdle: true,
  });
  // An idle connection the server closed: the pool drops it, the next query opens another.
  pool.on("error", () => undefined);
  pools.set(id, pool);
  return pool;
}

/** Every pool of this process closed (tests; a CLI that wants to exit at once). */
export async function closePostgresPools(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map((pool) => pool.end().catch(() => undefined)));
}

export class PostgresStore implements StateStore {
  readonly attributeFiles = false;
  readonly description: string;
  private readonly pool: pg.Pool;
  private readonly table: string;
  private readonly prefix: string;
  private readonly tls: PostgresTls;

  constructor(backendUrl: string, deadlineMs: number) {
    const { connectionString, table, prefix } = postgresLocation(backendUrl);
    this.tls = postgresTls(backendUrl);
    this.pool = poolFor(connectionString, this.tls, deadlineMs);
    this.table = table;
    this.prefix = prefix;
    this.description = `${redactUrl(backendUrl)} (table ${table})`;
  }

  /** The rows of a query; none when the table does not exist yet. */
  private async query(sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    return (await this.result(sql, params, [])).rows as Record<string, unknown>[];
  }

  /** A query's result; `ifNoTable` when the table does not exist yet (undefined: that is an error too). */
  private async result(sql: string, params: unknown[], ifNoTable: unknown[] | undefined): Promise<{ rows: unknown[]; rowCount: number | null }> {
    try {
      return await this.pool.query(sql, params);
    } catch (error) {
      if ((error as { code?: string }).code === undefinedTable && ifNoTable) return { rows: ifNoTable, rowCount: 0 };
      if (isUnverifiedCertificate(error)) throw new Error(`the state database ${this.description} was refused: its certificate could not be verified ${describeVerification(this.tls)}: ${unverifiedReason(error)}`, { cause: error });
      throw new Error(`the state database ${this.description} did not answer: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }

  async list(prefix: string): Promise<string[]> {
    const rows = await this.query(`SELECT key FROM ${this.table} WHERE key LIKE $1 ORDER BY key`, [`${likeLiteral(this.prefix + prefix)}%`]);
    return rows.map((row) => (row as unknown as Row).key.slice(this.prefix.length));
  }

  async read(key: string): Promise<string | undefined> {
    const [row] = await this.query(`SELECT data->>'data' AS data FROM ${this.table} WHERE key = $1`, [this.prefix + key]);
    const data = row?.["data"];
    return typeof data === "string" ? Buffer.from(data, "base64").toString("utf8") : undefined;
  }

  async write(key: string, text: string): Promise<void> {
    const data = JSON.stringify({ data: Buffer.from(text, "utf8").toString("base64") });
    await this.query(`INSERT INTO ${this.table} (key, data) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET data = $2, updated_at = now()`, [this.prefix + key, data]);
  }

  /** Only where no row is; the table must exist (a stack Pulumi made made it): a create must not vanish unnoticed. */
  async create(key: string, text: string): Promise<boolean> {
    const data = JSON.stringify({ data: Buffer.from(text, "utf8").toString("base64") });
    const { rowCount } = await this.result(`INSERT INTO ${this.table} (key, data) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, [this.prefix + key, data], undefined);
    return rowCount === 1;
  }

  async remove(key: string): Promise<void> {
    await this.query(`DELETE FROM ${this.table} WHERE key = $1`, [this.prefix + key]);
  }

  async removeAll(prefix: string): Promise<void> {
    await this.query(`DELETE FROM ${this.table} WHERE key LIKE $1`, [`${likeLiteral(this.prefix + prefix)}%`]);
  }
}

export function postgresStore(backendUrl: string, deadlineMs: number): PostgresStore {
  return new PostgresStore(backendUrl, deadlineMs);
}
