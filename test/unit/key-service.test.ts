// The key service of the stacks' secrets: data keys wrapped under the passphrase, a service that
// answers only its own token, and the pinned CLI's `hashivault://` provider really using it (an
// upgrade of the CLI or of its Vault client that changes the calls fails here).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { PassphraseKeyWrapper, secretsProviderUrl, startKeyService, WrongPassphraseError, type KeyService } from "../../operator/pulumi/key-service.ts";
import { toolPath } from "../../toolchain/tools.ts";

const dir = mkdtempSync(join(tmpdir(), "appstack-key-service-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("a wrapped key opens only with the passphrase it was wrapped under", async () => {
  const key = Buffer.from("0123456789abcdef0123456789abcdef");
  const wrapped = await new PassphraseKeyWrapper("right").wrap(key);
  assert.match(wrapped, /^appstack:v1:/);
  assert.ok(!wrapped.includes(key.toString("base64")));
  assert.deepEqual(await new PassphraseKeyWrapper("right").unwrap(wrapped), key, "another process, same passphrase");
  await assert.rejects(new PassphraseKeyWrapper("wrong").unwrap(wrapped), WrongPassphraseError);
  const tampered = wrapped.slice(0, -4) + (wrapped.endsWith("AAAA") ? "BBBB" : "AAAA");
  await assert.rejects(new PassphraseKeyWrapper("right").unwrap(tampered), WrongPassphraseError);
  await assert.rejects(new PassphraseKeyWrapper("right").unwrap("vault:v1:abc"), /not a key wrapped by appstack/);
});

test("the service answers only its own token, only on its two paths", async () => {
  const service = await startKeyService("p");
  after(() => service.close());
  const url = service.env["VAULT_SERVER_URL"] ?? "";
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const call = (path: string, token: string) =>
    fetch(`${url}${path}`, { method: "PUT", headers: { "x-vault-token": token }, body: JSON.stringify({ plaintext: Buffer.from("k").toString("base64") }) });
  assert.equal((await call("/v1/transit/encrypt/appstack", "not-the-token")).status, 403);
  assert.equal((await call("/v1/transit/encrypt/appstack", "")).status, 403);
  const token = service.env["VAULT_SERVER_TOKEN"] ?? "";
  assert.equal((await call("/v1/transit/encrypt/other", token)).status, 404);
  const encrypted = (await (await call("/v1/transit/encrypt/appstack", token)).json()) as { data: { ciphertext: string } };
  const decrypted = await fetch(`${url}/v1/transit/decrypt/appstack`, { method: "PUT", headers: { "x-vault-token": token }, body: JSON.stringify({ ciphertext: encrypted.data.ciphertext }) });
  assert.deepEqual(await decrypted.json(), { data: { plaintext: Buffer.from("k").toString("base64") } });
});

/** The pinned CLI in a project of its own, with the key service's environment. */
async function cli(service: KeyService, ...args: string[]): Promise<string> {
  const env = { ...process.env, ...service.env, PULUMI_HOME: join(dir, "home"), PULUMI_SKIP_UPDATE_CHECK: "true", PULUMI_CONFIG_PASSPHRASE: "" };
  return (await promisify(execFile)(toolPath("pulumi"), [...args, "--non-interactive"], { cwd: join(dir, "project"), encoding: "utf8", env })).stdout;
}

test("the pinned CLI keeps a stack's secrets with the key service, and a wrong passphrase fails with a clear message", async () => {
  mkdirSync(join(dir, "project", "state"), { recursive: true });
  writeFileSync(join(dir, "project", "Pulumi.yaml"), `name: keys\nruntime: nodejs\nbackend:\n  url: ${pathToFileURL(join(dir, "project", "state")).href}\n`);
  const service = await startKeyService("right");
  after(() => service.close());
  await cli(service, "stack", "init", "s", "--secrets-provider", secretsProviderUrl);
  await cli(service, "config", "set", "--secret", "token", "the-secret-4711", "--stack", "s");
  const settings = readFileSync(join(dir, "project", "Pulumi.s.yaml"), "utf8");
  assert.match(settings, /^secretsprovider: hashivault:\/\/appstack\nencryptedkey: /);
  assert.ok(!settings.includes("the-secret-4711"));
  // Another key service, as after a restart (new port, new token), with the same passphrase.
  const restarted = await startKeyService("right");
  after(() => restarted.close());
  assert.equal((await cli(restarted, "config", "get", "token", "--stack", "s")).trim(), "the-secret-4711");

  const wrong = await startKeyService("wrong");
  after(() => wrong.close());
  await assert.rejects(cli(wrong, "config", "get", "token", "--stack", "s"), (error: { stderr?: string }) => {
    assert.match(error.stderr ?? "", /the passphrase does not open this stack's secrets/);
    return true;
  });
});
