// The TLS settings of a postgres:// backend as postgres-tls.ts reads them, without a server: the
// mode chosen (verify-full where a CA is given and no sslmode is), what the engines are told so that
// lib/pq chooses alike, and the warning of a mode that leaves the server unverified.
// postgres-tls.test.ts runs both clients against a server with TLS on.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { backendTlsWarnings, engineTlsEnv, postgresTls, verificationWarning } from "../../operator/pulumi/postgres-tls.ts";

const dir = mkdtempSync(join(tmpdir(), "appstack-pg-tls-settings-"));
after(() => rmSync(dir, { recursive: true, force: true }));
// Only their existence is read here.
const caFile = join(dir, "ca.crt");
const otherCaFile = join(dir, "other-ca.crt");
writeFileSync(caFile, "-----BEGIN CERTIFICATE-----\n");
writeFileSync(otherCaFile, "-----BEGIN CERTIFICATE-----\n");
const base = "postgres://u:p@db.example/appstack";
/** A home of its own: no ~/.postgresql unless a test makes one. */
const newHome = () => mkdtempSync(join(dir, "home-"));

test("the settings are read as lib/pq reads them: the URL, then PGSSL* variables, then ~/.postgresql; what node-pg cannot do alike is refused", () => {
  const home = newHome();
  assert.deepEqual(postgresTls(base, {}, home), { mode: "require" });
  assert.deepEqual(postgresTls(`${base}?sslmode=disable`, { PGSSLMODE: "verify-full" }, home), { mode: "disable" });
  assert.deepEqual(postgresTls(base, { PGSSLMODE: "verify-ca", PGSSLROOTCERT: caFile }, home), { mode: "verify-ca", rootCert: caFile });
  assert.deepEqual(postgresTls(`${base}?sslrootcert=${caFile}`, { PGSSLROOTCERT: otherCaFile }, home), { mode: "verify-full", rootCert: caFile });
  assert.deepEqual(postgresTls(`${base}?sslrootcert=system`, {}, home), { mode: "verify-full", rootCert: "system" });
  assert.throws(() => postgresTls(`${base}?sslmode=prefer`, {}, home), /sslmode=prefer is not one appstack takes: disable, require, verify-ca, verify-full/);
  assert.throws(() => postgresTls(`${base}?sslmode=allow`, {}, home), /sslmode=allow is not one appstack takes/);
  assert.throws(() => postgresTls(`${base}?sslmode=require&sslrootcert=system`, {}, home), /sslrootcert=system needs sslmode=verify-full/);
  assert.throws(() => postgresTls(`${base}?sslmode=verify-full&sslrootcert=/nowhere/ca.crt`, {}, home), /CA bundle \(sslrootcert\) \/nowhere\/ca\.crt does not exist/);
  assert.throws(() => postgresTls(`${base}?sslrootcert=/nowhere/ca.crt`, {}, home), /CA bundle \(sslrootcert\) \/nowhere\/ca\.crt does not exist/);
});

test("a CA given and no sslmode: verify-full, wherever the CA comes from (the URL, PGSSLROOTCERT as the install gives it, ~/.postgresql/root.crt)", () => {
  const home = newHome();
  assert.equal(postgresTls(`${base}?sslrootcert=${caFile}`, {}, home).mode, "verify-full");
  assert.deepEqual(postgresTls(base, { PGSSLROOTCERT: caFile }, home), { mode: "verify-full", rootCert: caFile });
  mkdirSync(join(home, ".postgresql"));
  writeFileSync(join(home, ".postgresql", "root.crt"), "-----BEGIN CERTIFICATE-----\n");
  assert.deepEqual(postgresTls(base, {}, home), { mode: "verify-full", rootCert: join(home, ".postgresql", "root.crt") });
});

test("an sslmode named is kept, CA or not: in the URL, else PGSSLMODE", () => {
  const home = newHome();
  assert.equal(postgresTls(`${base}?sslmode=require&sslrootcert=${caFile}`, {}, home).mode, "require");
  assert.equal(postgresTls(`${base}?sslmode=verify-ca`, { PGSSLROOTCERT: caFile }, home).mode, "verify-ca");
  assert.equal(postgresTls(base, { PGSSLMODE: "require", PGSSLROOTCERT: caFile }, home).mode, "require");
  assert.equal(postgresTls(`${base}?sslmode=disable&sslrootcert=${caFile}`, {}, home).mode, "disable");
});

test("the engines are told the mode chosen only where neither the URL nor PGSSLMODE names one (lib/pq reads those itself)", () => {
  const home = newHome();
  assert.deepEqual(engineTlsEnv(base, { PGSSLROOTCERT: caFile }, home), { PGSSLMODE: "verify-full" });
  assert.deepEqual(engineTlsEnv(`${base}?sslrootcert=${caFile}`, {}, home), { PGSSLMODE: "verify-full" });
  assert.deepEqual(engineTlsEnv(base, {}, home), { PGSSLMODE: "require" });
  assert.deepEqual(engineTlsEnv(`${base}?sslmode=require&sslrootcert=${caFile}`, {}, home), {});
  assert.deepEqual(engineTlsEnv(base, { PGSSLMODE: "verify-ca", PGSSLROOTCERT: caFile }, home), {});
  assert.deepEqual(engineTlsEnv("file:///var/lib/appstack/backend", { PGSSLROOTCERT: caFile }, home), {});
});

test("a mode short of verify-full is warned of, saying what is left unverified and what verifies it", () => {
  const home = newHome();
  const warningOf = (url: string, env: Record<string, string> = {}) => verificationWarning(postgresTls(url, env, home));
  assert.equal(warningOf(`${base}?sslrootcert=${caFile}`), undefined, "verify-full by default: nothing to warn of");
  assert.equal(warningOf(`${base}?sslmode=verify-full`), undefined);
  assert.equal(warningOf(base), "the server's certificate is not verified: sslmode=require encrypts but accepts any certificate, so a server in the path can read and change every stack's state; give a CA (PGSSLROOTCERT / appstack:backendCaSecret) and sslmode=verify-full");
  assert.match(warningOf(`${base}?sslmode=require`) ?? "", /^the server's certificate is not verified: sslmode=require .*give a CA \(PGSSLROOTCERT \/ appstack:backendCaSecret\) and sslmode=verify-full$/);
  assert.match(warningOf(`${base}?sslmode=require&sslrootcert=${caFile}`) ?? "", /^the server's host name is not verified: sslmode=require checks its certificate against the CA bundle \S+ca\.crt, not that it names the host .*sslmode=verify-full checks both$/);
  assert.match(warningOf(`${base}?sslmode=verify-ca`) ?? "", /^the server's host name is not verified: sslmode=verify-ca checks its certificate against the system's CAs/);
  assert.match(warningOf(`${base}?sslmode=disable`) ?? "", /^the connection to the state database is not encrypted \(sslmode=disable\)/);
});

test("the backend's warnings: one under require, none for another backend, none for settings the start refuses with an error of their own", () => {
  const home = newHome();
  assert.deepEqual(backendTlsWarnings(base, {}, home).map((w) => w.split(":")[0]), ["the server's certificate is not verified"]);
  assert.deepEqual(backendTlsWarnings(base, { PGSSLROOTCERT: caFile }, home), []);
  assert.deepEqual(backendTlsWarnings("file:///var/lib/appstack/backend", {}, home), []);
  assert.deepEqual(backendTlsWarnings(`${base}?sslmode=prefer`, {}, home), []);
});
