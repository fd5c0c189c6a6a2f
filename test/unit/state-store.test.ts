import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
import { postgresLocation } from "../../operator/pulumi/postgres-store.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";
import { stateStore } from "../../operator/pulumi/state-store.ts";

test("the file store keeps keys as paths below the URL's folder: list at any depth, read, write, remove", async () => {
  const dir = mkdtempSync(join(tmpdir(), "appstack-store-"));
  try {
    const store = stateStore(pathToFileURL(dir).href, new StateIo(10_000))!;
    assert.equal(store.attributeFiles, true);
    assert.deepEqual(await store.list(".pulumi/locks/"), [], "a folder that is not there lists nothing");
    assert.equal(await store.read(".pulumi/stacks/appstack/a.json"), undefined);
    await store.write(".pulumi/locks/organization/appstack/a/1.json", "{}");
    await store.write(".pulumi/locks/organization/appstack/b/2.json", "{}");
    await store.write(".pulumi/stacks/appstack/a.json", "text");
    assert.deepEqual(await store.list(".pulumi/locks/"), [".pulumi/locks/organization/appstack/a/1.json", ".pulumi/locks/organization/appstack/b/2.json"]);
    assert.equal(await store.read(".pulumi/stacks/appstack/a.json"), "text");
    await store.remove(".pulumi/locks/organization/appstack/a/1.json");
    await store.remove(".pulumi/locks/organization/appstack/a/1.json");
    assert.deepEqual(await store.list(".pulumi/locks/"), [".pulumi/locks/organization/appstack/b/2.json"]);
    await store.removeAll(".pulumi/locks/");
    assert.deepEqual(await store.list(".pulumi/"), [".pulumi/stacks/appstack/a.json"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("only file:// and postgres:// backends are read directly", () => {
  assert.equal(stateStore("s3://bucket/path", new StateIo(10_000)), undefined);
  assert.equal(stateStore("postgres://u:p@127.0.0.1:1/db?sslmode=disable", new StateIo(10_000))?.attributeFiles, false);
});

test("a postgres:// URL locates Pulumi's rows as its driver does: ?table= (pulumi_state by default), the URL's path as the key prefix, no table name spliced that is not one", () => {
  assert.deepEqual(postgresLocation("postgres://u:p@h:5432/appstack?sslmode=disable"), { connectionString: "postgres://u:p@h:5432/appstack?sslmode=disable", table: "pulumi_state", prefix: "appstack/" });
  assert.deepEqual(postgresLocation("postgres://u:p@h/db?table=stacks.state&sslmode=disable"), { connectionString: "postgres://u:p@h/db?sslmode=disable", table: "stacks.state", prefix: "db/" });
  assert.equal(postgresLocation("postgres://u:p@h").prefix, "");
  assert.throws(() => postgresLocation("postgres://u:p@h/db?table=x;drop%20table%20y"), /not a plain table name/);
});
