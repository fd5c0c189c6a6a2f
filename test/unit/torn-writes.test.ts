// Attribute files a killed engine tore in a file backend laid out as Pulumi lays it out.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { createLogger } from "../../operator/base/log.ts";
import { repairTornAttributes } from "../../operator/pulumi/torn-writes.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";

const backend = mkdtempSync(join(tmpdir(), "appstack-torn-"));
after(() => rmSync(backend, { recursive: true, force: true }));
const log = createLogger({ level: "error", write: () => undefined });
const io = new StateIo(60_000);
const stacks = join(backend, ".pulumi", "stacks", "appstack");
const attrs = '{"user.content_type":"text/plain; charset=utf-8","md5":"UHP9q4Rk3F5hD7dOWaoL5w=="}\n';

function file(name: string, content: string): string {
  mkdirSync(stacks, { recursive: true });
  const path = join(stacks, name);
  writeFileSync(path, content);
  return path;
}

test("only the unreadable attribute files of the stack asked for (or of every stack) are removed, never a checkpoint", async () => {
  const checkpoint = file("app.default.k-12.json", '{"version":3}');
  const torn = file("app.default.k-12.json.attrs", "");
  const tornBackup = file("app.default.k-12.json.bak.attrs", '{"user.content_ty');
  const neighbour = file("app.default.k-1.json.attrs", "");
  const whole = file("app.default.k-2.json.attrs", attrs);
  const url = pathToFileURL(backend).href;

  assert.equal(await repairTornAttributes(url, "appstack", log, io, "app.default.k-12"), 2);
  assert.ok(!existsSync(torn) && !existsSync(tornBackup));
  assert.ok(existsSync(checkpoint), "the checkpoint itself is never touched");
  assert.ok(existsSync(neighbour), "a stack whose name only begins alike is another stack");
  assert.equal(await repairTornAttributes(url, "appstack", log, io), 1, "every stack: the neighbour's");
  assert.ok(!existsSync(neighbour) && existsSync(whole));
  assert.equal(await repairTornAttributes(url, "appstack", log, io), 0);
  assert.equal(await repairTornAttributes("s3://bucket", "appstack", log, io), 0);
});
