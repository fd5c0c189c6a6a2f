// The kept provider passes every call of the provider protocol to the provider of the calling
// connection, not a list of calls written by hand (toolchain/kubernetes-provider/forward): its
// own Go test, with a provider that implements calls no list named (Handshake), run here so that
// `npm test` runs it. It compiles only gRPC and the protocol's package, which the provider's
// build has compiled already.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { toolchainDir } from "../../toolchain/tools.ts";

test("every call of the protocol reaches the attached provider; Attach and the calls the slot adds to stay its own", () => {
  const result = spawnSync("go", ["test", "-count=1", "./forward/"], {
    cwd: join(toolchainDir, "kubernetes-provider"),
    env: { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=readonly" },
    encoding: "utf8",
    timeout: 600_000,
  });
  assert.equal(result.status, 0, `${result.stdout}${result.stderr}`);
  assert.match(result.stdout, /^ok\s+appstack\.dev\/toolchain\/kubernetes-provider\/forward/m);
});
