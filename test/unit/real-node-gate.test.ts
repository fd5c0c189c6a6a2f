import assert from "node:assert/strict";
import { test } from "node:test";
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
    assert.match(both, /apt-get install buildah mmdebstrap runc containerd iptables iproute2\)/);
  } finally {
    process.env["PATH"] = path;
  }
});

test("as root with everything in place, they run", { skip: here === undefined ? false : `this machine ${here}` }, () => {
  assert.equal(realNodeSkip("images and node", { CI: "true" }, 0), false);
});
