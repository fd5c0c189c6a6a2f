// TLS to a `postgres://` backend, read once for both of its clients: Pulumi's engine, whose driver
// is lib/pq (v1.12.3 in the pinned CLI: its ssl.go and connector.go), and the operator's own reads
// through node-pg. lib/pq reads the URL as libpq does; node-pg's own reading of the same words
// differs (`require` there verifies against Node's CA list), so the operator never lets node-pg
// read them: it resolves the settings here, as lib/pq would, and gives node-pg its `ssl` options.
//
// As lib/pq: each setting from the URL, else its environment variable (PGSSLMODE, PGSSLROOTCERT,
// PGSSLCERT, PGSSLKEY: the engines inherit the operator's environment), else the files of
// ~/.postgresql when they exist. One default differs: lib/pq's mode is `require` whatever CA it is
// given (the chain checked, not the host name); here a CA given makes it `verify-full`, and the
// engines are told so (engineTlsEnv), so that both clients check the host too.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { getCACertificates, type ConnectionOptions } from "node:tls";
import { isPostgresUrl } from "../base/shared-backend.ts";

/** The modes both clients read alike. */
export const sslModes = ["disable", "require", "verify-ca", "verify-full"] as const;
export type SslMode = (typeof sslModes)[number];

/** The URL's parameters read here; node-pg is given the connection string without them. */
export const tlsParameters = ["sslmode", "sslrootcert", "sslcert", "sslkey", "sslnegotiation"] as const;

export interface PostgresTls {
  readonly mode: SslMode;
  /**
   * What the server's certificate is verified against: a file of PEM certificates, or "system"
   * (the system's CAs, as also when verify-ca or verify-full name none). `require` with a file
   * verifies the chain as verify-ca does; without one it only encrypts.
   */
  readonly rootCert?: string;
  /** The client's certificate and key files, when one is given or ~/.postgresql/postgresql.crt exists. */
  readonly clientCert?: { readonly cert: string; readonly key: string };
  /** `direct`: TLS from the first byte, without PostgreSQL's SSLRequest (both clients refuse it with `disable`). */
  readonly negotiation?: "direct" | "postgres";
}

type Env = Readonly<Record<string, string | undefined>>;

/** A file of ~/.postgresql, when it exists. */
function ownFile(home: string, name: string): string | undefined {
  const path = join(home, ".postgresql", name);
  return existsSync(path) ? path : undefined;
}

type Given = (name: string, variable: string) => string | undefined;

/**
 * The mode, checked against the CA setting: lib/pq trusts the system's CAs only with the host
 * checked. None named: `verify-full` where there is a CA to verify against (whoever gives one means
 * the server to be verified, and a CA alone leaves its host name unchecked), else `require`.
 */
function modeOf(given: Given, rootCert: string | undefined): SslMode {
  const mode = given("sslmode", "PGSSLMODE") ?? (rootCert ? "verify-full" : "require");
  if (!(sslModes as readonly string[]).includes(mode)) throw new Error(`the backend URL's sslmode=${mode} is not one appstack takes: ${sslModes.join(", ")} (Pulumi's driver and the operator must read it alike)`);
  if (rootCert === "system" && mode !== "verify-full") throw new Error(`the backend URL's sslrootcert=system needs sslmode=verify-full, not ${mode}`);
  return mode as SslMode;
}

function negotiationOf(given: Given): Pick<PostgresTls, "negotiation"> {
  const negotiation = given("sslnegotiation", "PGSSLNEGOTIATION");
  if (negotiation === undefined) return {};
  if (negotiation !== "direct" && negotiation !== "postgres") throw new Error(`the backend URL's sslnegotiation=${negotiation} is neither direct nor postgres`);
  return { negotiation };
}

/** The client's certificate, as lib/pq finds it: given, else ~/.postgresql/postgresql.crt; none when the file is missing. */
function clientCertOf(given: Given, home: string): Pick<PostgresTls, "clientCert"> {
  const cert = given("sslcert", "PGSSLCERT") ?? ownFile(home, "postgresql.crt");
  const key = given("sslkey", "PGSSLKEY") ?? join(home, ".postgresql", "postgresql.key");
  return cert && existsSync(cert) ? { clientCert: { cert, key } } : {};
}

/**
 * The TLS settings of `backendUrl` as Pulumi's driver reads them. Refuses what the operator's
 * reads cannot do alike: `allow` and `prefer` (lib/pq falls back between plain and TLS
 * connections, node-pg cannot), and a CA file that is named but missing (lib/pq would then skip
 * the verification under `require` without a word).
 */
export function postgresTls(backendUrl: string, env: Env = process.env, home = homedir()): PostgresTls {
  const params = new URL(backendUrl).searchParams;
  const given: Given = (name, variable) => params.get(name) || env[variable] || undefined;
  const named = given("sslrootcert", "PGSSLROOTCERT");
  const rootCert = named ?? ownFile(home, "root.crt");
  const mode = modeOf(given, rootCert);
  const negotiation = negotiationOf(given);
  if (mode === "disable") return { mode, ...negotiation };
  if (named && named !== "system" && !existsSync(named)) throw new Error(`the backend URL's CA bundle (sslrootcert) ${named} does not exist`);
  return { mode, ...(rootCert ? { rootCert } : {}), ...clientCertOf(given, home), ...negotiation };
}

/**
 * What the engines are given besides the operator's environment: the mode chosen here when neither
 * the URL nor PGSSLMODE names one, which lib/pq would otherwise take for `require` (the URL's own
 * `sslmode` wins over PGSSLMODE in lib/pq, as here). Nothing for another backend.
 */
export function engineTlsEnv(backendUrl: string, env: Env = process.env, home = homedir()): Record<string, string> {
  if (!isPostgresUrl(backendUrl) || new URL(backendUrl).searchParams.get("sslmode") || env["PGSSLMODE"]) return {};
  return { PGSSLMODE: postgresTls(backendUrl, env, home).mode };
}

/** The CA `tls` verifies against, in words. */
function caOf(tls: PostgresTls): string {
  return !tls.rootCert || tls.rootCert === "system" ? "the system's CAs" : `the CA bundle ${tls.rootCert}`;
}

const askVerifyFull = "give a CA (PGSSLROOTCERT / appstack:backendCaSecret) and sslmode=verify-full";

/** What `tls` leaves unverified, said at start and in /readyz; undefined under verify-full. */
export function verificationWarning(tls: PostgresTls): string | undefined {
  if (tls.mode === "verify-full") return undefined;
  if (tls.mode === "disable") return `the connection to the state database is not encrypted (sslmode=disable): anyone on the path reads and changes every stack's state; ${askVerifyFull}`;
  if (tls.mode === "require" && !tls.rootCert) return `the server's certificate is not verified: sslmode=require encrypts but accepts any certificate, so a server in the path can read and change every stack's state; ${askVerifyFull}`;
  return `the server's host name is not verified: sslmode=${tls.mode} checks its certificate against ${caOf(tls)}, not that it names the host the URL names; sslmode=verify-full checks both`;
}

/**
 * The warnings of `backendUrl`'s TLS: none for another backend, or for settings that are refused
 * (they stop the start where the state store is opened, with their own error).
 */
export function backendTlsWarnings(backendUrl: string, env: Env = process.env, home = homedir()): string[] {
  if (!isPostgresUrl(backendUrl)) return [];
  let tls: PostgresTls;
  try {
    tls = postgresTls(backendUrl, env, home);
  } catch {
    return [];
  }
  const warning = verificationWarning(tls);
  return warning ? [warning] : [];
}

/** node-pg's options of `tls`: the same verification as lib/pq's. */
export function nodePgTls(tls: PostgresTls): { ssl: false | ConnectionOptions; sslnegotiation?: "direct" | "postgres" } {
  return { ssl: nodePgSsl(tls), ...(tls.negotiation ? { sslnegotiation: tls.negotiation } : {}) };
}

function nodePgSsl(tls: PostgresTls): false | ConnectionOptions {
  if (tls.mode === "disable") return false;
  const client = tls.clientCert ? { cert: readFileSync(tls.clientCert.cert, "utf8"), key: readFileSync(tls.clientCert.key, "utf8") } : {};
  if (tls.mode === "require" && !tls.rootCert) return { ...client, rejectUnauthorized: false };
  // Go's x509 verifies against the system's CAs where no file is given: not Node's own list.
  const ca = tls.rootCert && tls.rootCert !== "system" ? readFileSync(tls.rootCert, "utf8") : getCACertificates("system");
  // verify-ca, and require with a CA file: the chain, not the host name.
  const anyHost = tls.mode === "verify-full" ? {} : { checkServerIdentity: () => undefined };
  return { ...client, ca, rejectUnauthorized: true, ...anyHost };
}

/** The connection string node-pg is given: without the parameters read here, which it would read its own way. */
export function withoutTlsParameters(connectionString: string): string {
  const url = new URL(connectionString);
  for (const name of tlsParameters) url.searchParams.delete(name);
  return url.href;
}

/** What the server's certificate was checked against, for an error that says it could not be verified. */
export function describeVerification(tls: PostgresTls): string {
  return `against ${caOf(tls)} (sslmode=${tls.mode}${tls.mode === "verify-full" ? ", its host name too" : ""})`;
}

/** Node's codes of a server certificate that failed verification. */
const unverified = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN", "DEPTH_ZERO_SELF_SIGNED_CERT", "UNABLE_TO_VERIFY_LEAF_SIGNATURE", "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY", "CERT_UNTRUSTED", "CERT_SIGNATURE_FAILURE", "CERT_HAS_EXPIRED", "CERT_NOT_YET_VALID",
  "CERT_REJECTED", "INVALID_CA", "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** Whether `error` is a server certificate that failed verification. */
export function isUnverifiedCertificate(error: unknown): boolean {
  return unverified.has(String((error as { code?: unknown } | undefined)?.code));
}

/** Node's reason, without its hint to run Node with --use-system-ca: the CAs are the URL's to name. */
export function unverifiedReason(error: unknown): string {
  return String((error as Error).message).replace(/; if the root CA is installed locally.*$/s, "");
}
