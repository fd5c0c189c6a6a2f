// The install's CA bundle for a PostgreSQL backend with a private CA (appstack:backendCaSecret),
// under Pulumi's mocks: the Secret mounted read-only and named by PGSSLROOTCERT, which the operator
// and its engines read as the URL's sslrootcert (test/e2e/postgres-backend.test.ts runs an
// operator with it against a server with TLS).
import assert from "node:assert/strict";
import { before, test } from "node:test";
import type * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";
import { recordRegistrations, registeredResource } from "../helpers/pulumi-mocks.ts";

const registered = await recordRegistrations();

// Imported after setMocks, as the mocks require.
let install: typeof import("../../components/install.ts");
before(async () => {
  install = await import("../../components/install.ts");
});

async function podSpecOf(resource: pulumi.ComponentResource, name: string): Promise<k8s.types.input.core.v1.PodSpec> {
  await registeredResource(resource);
  const type = "kubernetes:apps/v1:Deployment";
  for (let tries = 0; tries < 100 && !registered.some((r) => r.type === type && r.name === name); tries++) await new Promise((resolve) => setTimeout(resolve, 10));
  const found = registered.find((r) => r.type === type && r.name === name);
  assert.ok(found, `no ${type} ${name} registered`);
  return (found.inputs["spec"] as { template: { spec: k8s.types.input.core.v1.PodSpec } }).template.spec;
}

test("backendCaSecret: its ca.crt mounted read-only, PGSSLROOTCERT naming the file; nothing of it without the option", async () => {
  const backendUrl = "postgres://appstack:s3cret@db.example:5432/appstack?sslmode=verify-full";
  const spec = await podSpecOf(new install.AppstackInstall("ca", { passphrase: "p", backendUrl, backendCaSecret: "db-ca" }), "ca-operator");
  const [operator] = spec.containers as k8s.types.input.core.v1.Container[];
  const mount = (operator?.volumeMounts as k8s.types.input.core.v1.VolumeMount[]).find((m) => m.name === "backend-ca");
  assert.deepEqual(mount, { name: "backend-ca", mountPath: "/etc/appstack/backend-ca", readOnly: true });
  const volume = (spec.volumes as k8s.types.input.core.v1.Volume[]).find((v) => v.name === "backend-ca");
  assert.deepEqual(volume?.secret, { secretName: "db-ca", items: [{ key: "ca.crt", path: "ca.crt" }] });
  const env = operator?.env as { name: string; value?: string }[];
  assert.equal(env.find((e) => e.name === "PGSSLROOTCERT")?.value, "/etc/appstack/backend-ca/ca.crt");

  const plain = await podSpecOf(new install.AppstackInstall("no-ca", { passphrase: "p", backendUrl }), "no-ca-operator");
  const [plainOperator] = plain.containers as k8s.types.input.core.v1.Container[];
  assert.ok(!(plain.volumes as { name: string }[]).some((v) => v.name === "backend-ca"));
  assert.ok(!(plainOperator?.env as { name: string }[]).some((e) => e.name === "PGSSLROOTCERT"));
});

test("backendCaSecret without a PostgreSQL backendUrl is refused at preview", () => {
  assert.throws(() => new install.AppstackInstall("ca-on-files", { passphrase: "p", backendCaSecret: "db-ca" }), /appstack:backendCaSecret is the CA bundle of a PostgreSQL appstack:backendUrl/);
});
