// TLS to the postgres:// backend read alike by its two clients: the operator's own reads (node-pg,
// PostgresStore) and the pinned Pulumi CLI (lib/pq), against a real PostgreSQL server with TLS on
// and a certificate of a CA of the test's own, which names the server's address 127.0.0.1 only.
// For each URL, both connect or both are refused. No cluster: the CLI's `stack ls` reaches the
// backend as every engine does, with what the operator adds to the engines' environment. The pure
// reading of the settings: postgres-tls-settings.test.ts.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { closePostgresPools, PostgresStore } from "../../operator/pulumi/postgres-store.ts";
import { engineTlsEnv } from "../../operator/pulumi/postgres-tls.ts";
import { certificateAuthority, servingCertificate } from "../../toolchain/cluster/pki.ts";
import { startPostgres, type PostgresServer } from "../../toolchain/cluster/postgres.ts";
import { engineBinaries } from "../../toolchain/tools.ts";

const dir = mkdtempSync(join(tmpdir(), "appstack-pg-tls-"));
/** The server's own folder, which it opens to the user it runs as. */
const serverDir = mkdtempSync(join(tmpdir(), "appstack-pg-tls-server-"));
const serverCa = certificateAuthority("appstack-test-postgres-ca");
const otherCa = certificateAuthority("appstack-test-other-ca");
const rightCaFile = join(dir, "right-ca.crt");
const wrongCaFile = join(dir, "wrong-ca.crt");
let server: PostgresServer | undefined;

before(async () => {
  writeFileSync(rightCaFile, serverCa.certPem);
  writeFileSync(wrongCaFile, otherCa.certPem);
  server = await startPostgres({ dir: serverDir, tls: servingCertificate(serverCa, "appstack-test-postgres", { ips: ["127.0.0.1"] }) });
});
after(async () => {
  await closePostgresPools();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
  rmSync(serverDir, { recursive: true, force: true });
});

/** The server's URL with `host` and these TLS parameters instead of its own `sslmode=disable`. */
function urlWith(params: Record<string, string>, host = "127.0.0.1"): string {
  const url = new URL(server!.url);
  url.hostname = host;
  url.searchParams.delete("sslmode");
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.href;
}

type Outcome = { ok: true } | { ok: false; message: string };

/** The operator's own read of the backend. */
async function storeReads(url: string): Promise<Outcome> {
  try {
    await new PostgresStore(url, 15_000).list(".pulumi/");
    return { ok: true };
  } catch (error) {
    return { ok: false, message: String(error) };
  }
}

let homes = 0;

/** The pinned CLI on the backend: `stack ls` opens it (a ping, and the table made if missing) as every engine does. */
async function cliReads(url: string): Promise<Outcome> {
  const home = join(dir, `pulumi-home-${homes++}`);
  mkdirSync(home);
  const env = { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: home, PULUMI_HOME: home, PULUMI_BACKEND_URL: url, PULUMI_SKIP_UPDATE_CHECK: "true", PULUMI_DIY_BACKEND_PARALLEL: "1", ...engineTlsEnv(url, {}, home) };
  try {
    await promisify(execFile)(join(engineBinaries().cliRoot, "bin", "pulumi"), ["stack", "ls", "--all", "--json", "--non-interactive"], { cwd: home, env, timeout: 60_000 });
    return { ok: true };
  } catch (error) {
    return { ok: false, message: String((error as { stderr?: string }).stderr || error) };
  }
}

const cases: { what: string; url: () => string; ok: boolean; store?: RegExp; cli?: RegExp }[] = [
  { what: "sslmode=disable", url: () => urlWith({ sslmode: "disable" }), ok: true },
  { what: "no sslmode (lib/pq's default: require)", url: () => urlWith({}), ok: true },
  { what: "sslmode=require: encrypted, the server's CA unknown and not asked for", url: () => urlWith({ sslmode: "require" }), ok: true },
  { what: "sslmode=require with the wrong CA bundle: the chain is verified (libpq's rule)", url: () => urlWith({ sslmode: "require", sslrootcert: wrongCaFile }), ok: false, store: /certificate could not be verified against the CA bundle/, cli: /x509: certificate signed by unknown authority/ },
  { what: "sslmode=require with the server's CA", url: () => urlWith({ sslmode: "require", sslrootcert: rightCaFile }), ok: true },
  { what: "sslmode=verify-ca with the server's CA, a host name the certificate does not name", url: () => urlWith({ sslmode: "verify-ca", sslrootcert: rightCaFile }, "localhost"), ok: true },
  { what: "sslmode=verify-full with the server's CA", url: () => urlWith({ sslmode: "verify-full", sslrootcert: rightCaFile }), ok: true },
  { what: "sslmode=verify-full with the server's CA, a host name the certificate does not name", url: () => urlWith({ sslmode: "verify-full", sslrootcert: rightCaFile }, "localhost"), ok: false, store: /certificate could not be verified .*its host name too/, cli: /x509: certificate is not valid for any names, but wanted to match localhost/ },
  { what: "sslmode=verify-full with the wrong CA bundle", url: () => urlWith({ sslmode: "verify-full", sslrootcert: wrongCaFile }), ok: false, store: /certificate could not be verified against the CA bundle .*wrong-ca\.crt/, cli: /x509: certificate signed by unknown authority/ },
  // With a CA and no sslmode both verify the host name too (lib/pq alone would take require).
  { what: "no sslmode, the server's CA: verify-full by default", url: () => urlWith({ sslrootcert: rightCaFile }), ok: true },
  { what: "no sslmode, the server's CA, a host name the certificate does not name: verify-full by default", url: () => urlWith({ sslrootcert: rightCaFile }, "localhost"), ok: false, store: /certificate could not be verified .*\(sslmode=verify-full, its host name too\)/, cli: /x509: certificate is not valid for any names, but wanted to match localhost/ },
  { what: "sslmode=verify-full with no CA bundle: the system's CAs", url: () => urlWith({ sslmode: "verify-full" }), ok: false, store: /certificate could not be verified against the system's CAs/, cli: /x509: certificate signed by unknown authority/ },
];

for (const { what, url, ok, store, cli } of cases) {
  test(`${what}: the operator's reads and the engine's ${ok ? "both connect" : "are both refused"}`, async () => {
    const [operator, engine] = [await storeReads(url()), await cliReads(url())];
    assert.deepEqual({ operator: operator.ok, engine: engine.ok }, { operator: ok, engine: ok }, JSON.stringify({ operator, engine }));
    if (!operator.ok && store) assert.match(operator.message, store);
    if (!engine.ok && cli) assert.match(engine.message, cli);
    if (!operator.ok) assert.ok(!operator.message.includes(new URL(server!.url).password), "the operator's error carries no password");
  });
}
