// Credentials stay secret: a backend URL's credentials never reach a log line, and the install
// hands the backend URL and the passphrase to the operator only through its Secret.
import assert from "node:assert/strict";
import { test } from "node:test";
import { operatorEnvironment, passphraseVolumes } from "../../components/install.ts";
import { createLogger } from "../../operator/base/log.ts";
import { keepSecretsOf, redactKnownSecrets, redactUrl } from "../../operator/base/redact.ts";

test("a backend URL is logged without its credentials", () => {
  assert.equal(redactUrl("postgres://appstack:s3cr3t@db:5432/state"), "postgres://appstack:***@db:5432/state");
  assert.equal(redactUrl("s3://bucket/state?region=eu-west-1&accessKey=AKIAX&secretKey=abc"), "s3://bucket/state?region=eu-west-1&accessKey=***&secretKey=***");
  assert.equal(redactUrl("azblob://state?storage_account=acct&sas_token=sv%3D2024"), "azblob://state?storage_account=acct&sas_token=***");
  assert.equal(redactUrl("file:///var/lib/appstack/backend"), "file:///var/lib/appstack/backend");
  assert.equal(redactUrl("not a url with secrets"), "***");
});

test("the backend URL's password, once known, is out of every log line and reported text, however an error quotes it (Pulumi's quote the URL as given)", () => {
  keepSecretsOf("postgres://appstack:Cp%2FRHp78UWqy@127.0.0.1:24819/postgres?sslmode=disable");
  const pulumiError = 'error: unable to open state database "postgres://appstack:Cp%2FRHp78UWqy@127.0.0.1:24819/postgres": failed to ping PostgreSQL (password Cp/RHp78UWqy)';
  const lines: string[] = [];
  createLogger({ write: (line) => lines.push(line) }).error("reconcile failed", { error: pulumiError });
  createLogger({ format: "text", write: (line) => lines.push(line) }).error(pulumiError);
  for (const line of lines) assert.ok(!line.includes("RHp78UWqy"), line);
  assert.deepEqual(redactKnownSecrets({ conditions: [{ message: pulumiError }] }), { conditions: [{ message: 'error: unable to open state database "postgres://appstack:***@127.0.0.1:24819/postgres": failed to ping PostgreSQL (password ***)' }] });
});

test("the installed operator reads the backend URL from its Secret and the passphrase from its Secret mounted as a file, never from a plain value", () => {
  const url = "postgres://appstack:s3cr3t@db:5432/state";
  const env = operatorEnvironment({ passphrase: "p", backendUrl: url }, "appstack-operator-passphrase");
  const backend = env.find((e) => e.name === "APPSTACK_BACKEND_URL");
  assert.deepEqual(backend?.valueFrom, { secretKeyRef: { name: "appstack-operator-passphrase", key: "backendUrl" } });
  // The passphrase is a file of the Secret, mounted: no variable of the pod holds it.
  assert.equal(env.find((e) => e.name === "APPSTACK_PASSPHRASE"), undefined);
  assert.deepEqual(env.find((e) => e.name === "APPSTACK_PASSPHRASE_FILE"), { name: "APPSTACK_PASSPHRASE_FILE", value: "/etc/appstack/passphrase/passphrase" });
  const mounted = passphraseVolumes({ passphrase: "p" }, "appstack-operator-passphrase");
  assert.deepEqual(mounted.volumes, [{ name: "passphrase", secret: { secretName: "appstack-operator-passphrase", items: [{ key: "passphrase", path: "passphrase" }] } }]);
  assert.deepEqual(mounted.mounts, [{ name: "passphrase", mountPath: "/etc/appstack/passphrase", readOnly: true }]);
  assert.deepEqual(passphraseVolumes({ passphraseSecret: "team-credentials" }).volumes, [{ name: "passphrase", secret: { secretName: "team-credentials", items: [{ key: "passphrase", path: "passphrase" }] } }]);
  assert.ok(!JSON.stringify(env).includes("s3cr3t"));
});
