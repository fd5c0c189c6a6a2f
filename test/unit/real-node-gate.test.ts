import assert from "node:assert/strict";
import { test } from "node:test";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { installHostPackages } from "../../toolchain/host-packages.ts";
import { missingForRealNode, realNodeSkip } from "../helpers/real-node-gate.ts";

const here = missingForRealNode("images and node", 0);

test("not root: the files skip and say so, unless CI or APPSTACK_REAL_NODE_TESTS=1 requires them, which fails them", () => {
  const skip = realNodeSkip("node", {}, 1000);
  assert.equal(typeof skip, "string");
  assert.match(skip as string, /needs root/);
  assert.match(skip as string, /CI runs it/);
  assert.throws(() => realNodeSkip("node", { CI: "true" }, 1000), /needs root.*it must run, so it fails rather than skips/);
  assert.throws(() => realNodeSkip("images", { APPSTACK_REAL_NODE_TESTS: "1" }, 1000), /needs root/);
});

test("APPSTACK_REAL_NODE_TESTS=0 skips them, even under CI", () => {
  assert.match(realNodeSkip("images and node", { CI: "true", APPSTACK_REAL_NODE_TESTS: "0" }, 1000) as string, /APPSTACK_REAL_NODE_TESTS=0/);
});

test("a missing command is named with the Debian package that brings it", () => {
  const path = process.env["PATH"];
  process.env["PATH"] = "/nonexistent";
  try {
    const missing = missingForRealNode("images", 0) ?? "";
    assert.match(missing, /buildah, mmdebstrap, runc \(apt-get install buildah mmdebstrap runc\)/);
    assert.doesNotMatch(missing, /root/);
    const both = missingForRealNode("images and node", 0) ?? "";
    assert.equal(both.match(/runc/g)?.length, 2, both); // once among the commands, once among the packages
    assert.match(both, /apt-get install buildah mmdebstrap runc containerd iptables iproute2\b/);
  } finally {
    process.env["PATH"] = path;
  }
});

test("as root with everything in place, they run", { skip: here === undefined ? false : `this machine ${here}` }, () => {
  assert.equal(realNodeSkip("images and node", { CI: "true" }, 0), false);
});

/** Runs body with PATH holding only a fake apt-get that records its arguments, one call a line. */
function withFakeAptGet(body: (calls: () => string[]) => void): void {
  const dir = mkdtempSync(join(tmpdir(), "appstack-apt-"));
  const record = join(dir, "calls");
  writeFileSync(join(dir, "apt-get"), `#!/bin/sh\necho "$*" >> ${record}\n`);
  chmodSync(join(dir, "apt-get"), 0o755);
  const path = process.env["PATH"];
  process.env["PATH"] = dir;
  try {
    body(() => readFileSync(record, "utf8").trim().split("\n"));
  } finally {
    process.env["PATH"] = path;
    rmSync(dir, { recursive: true, force: true });
  }
}

test("the toolchain step installs the missing packages only where the files must run, as root", () => {
  withFakeAptGet((calls) => {
    const log: string[] = [];
    assert.deepEqual(installHostPackages((line) => log.push(line), {}, 0), [], "not under CI: nothing installed");
    assert.deepEqual(installHostPackages((line) => log.push(line), { CI: "true" }, 1000), [], "not root: nothing installed");
    assert.deepEqual(installHostPackages((line) => log.push(line), { CI: "true", APPSTACK_REAL_NODE_TESTS: "0" }, 0), [], "skipped: nothing installed");
    assert.equal(log.length, 0, log.join("\n"));
    assert.throws(() => calls(), /ENOENT/, "apt-get was never run");
    // Under CI as root: apt-get update, then one install of every missing package. The fake installs
    // nothing, so the step fails and names what is still missing rather than let the tests find out.
    assert.throws(() => installHostPackages((line) => log.push(line), { CI: "true" }, 0), /still missing after apt-get install: buildah, mmdebstrap, runc, containerd, ctr, iptables, ip\b/);
    const [update, install, ...rest] = calls();
    assert.equal(update, "update -q");
    assert.match(install ?? "", /^install -y -q --no-install-recommends buildah mmdebstrap runc containerd iptables iproute2\b/);
    assert.deepEqual(rest, []);
    assert.match(log[0] ?? "", /installing Debian's buildah mmdebstrap runc containerd iptables iproute2/);
  });
});
