// Credentials stay secret: a backend URL's credentials never reach a log line, and the install
// hands the backend URL and the passphrase to the operator only through its Secret.
import assert from "node:assert/strict";
import { test } from "node:test";
import { operatorEnvironment } from "../../components/install.ts";
import { redactUrl } from "../../operator/base/redact.ts";

test("a backend URL is logged without its credentials", () => {
  assert.equal(redactUrl("postgres://appstack:s3cr3t@db:5432/state"), "postgres://appstack:***@db:5432/state");
  assert.equal(redactUrl("s3://bucket/state?region=eu-west-1&accessKey=AKIAX&secretKey=abc"), "s3://bucket/state?region=eu-west-1&accessKey=***&secretKey=***");
  assert.equal(redactUrl("azblob://state?storage_account=acct&sas_token=sv%3D2024"), "azblob://state?storage_account=acct&sas_token=***");
  assert.equal(redactUrl("file:///var/lib/appstack/backend"), "file:///var/lib/appstack/backend");
  assert.equal(redactUrl("not a url with secrets"), "***");
});

test("the installed operator reads the backend URL and the passphrase from its Secret, never from a plain value", () => {
  const url = "postgres://appstack:s3cr3t@db:5432/state";
  const env = operatorEnvironment({ passphrase: "p", backendUrl: url }, "appstack-operator-passphrase");
  const backend = env.find((e) => e.name === "APPSTACK_BACKEND_URL");
  assert.deepEqual(backend?.valueFrom, { secretKeyRef: { name: "appstack-operator-passphrase", key: "backendUrl" } });
  assert.deepEqual(env.find((e) => e.name === "APPSTACK_PASSPHRASE")?.valueFrom, { secretKeyRef: { name: "appstack-operator-passphrase", key: "passphrase" } });
  assert.ok(!JSON.stringify(env).includes("s3cr3t"));
});
