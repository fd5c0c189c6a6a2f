// The pinned CLI is built with a stand-in for the zxcvbn password-strength libraries
// (toolchain/pulumi/zxcvbn: their word lists cost every engine start about 80 ms of CPU). What the
// CLI used them for still holds: `pulumi config set` refuses a plaintext value that looks like a
// secret under a key named like one, and takes a plain one. Fails if the stand-in stops flagging
// what zxcvbn flags, or if the binary links the real libraries again.
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { toolPath } from "../../toolchain/tools.ts";

const dir = mkdtempSync(join(tmpdir(), "appstack-cli-secret-check-"));
after(() => rmSync(dir, { recursive: true, force: true }));

async function pulumi(...args: string[]): Promise<{ code: number; output: string }> {
  const env = { ...process.env, PULUMI_HOME: join(dir, "home"), PULUMI_SKIP_UPDATE_CHECK: "true", PULUMI_CONFIG_PASSPHRASE: "secret-check" };
  return promisify(execFile)(toolPath("pulumi"), [...args, "--non-interactive"], { cwd: join(dir, "project"), encoding: "utf8", env }).then(
    ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code ?? 1, output: `${error.stdout ?? ""}${error.stderr ?? ""}` }),
  );
}

test("pulumi config set still refuses a plaintext value that looks like a secret, and takes a plain one", async () => {
  mkdirSync(join(dir, "project", "state"), { recursive: true });
  writeFileSync(join(dir, "project", "Pulumi.yaml"), `name: secret-check\nruntime: nodejs\nbackend:\n  url: ${pathToFileURL(join(dir, "project", "state")).href}\n`);
  assert.equal((await pulumi("stack", "init", "dev")).code, 0);

  // Random characters of four classes: what zxcvbn flags, and so must the stand-in.
  const refused = await pulumi("config", "set", "dbPassword", "Xk9#mP2$vL8@qR4!");
  assert.notEqual(refused.code, 0);
  assert.match(refused.output, /looks like a secret/);
  assert.equal((await pulumi("config", "set", "--secret", "dbPassword", "Xk9#mP2$vL8@qR4!")).code, 0);

  // Short, or under a key not named like a secret: taken as it is.
  assert.equal((await pulumi("config", "set", "dbPassword", "admin")).code, 0);
  assert.equal((await pulumi("config", "set", "image", "Xk9#mP2$vL8@qR4!")).code, 0);
});

test("the pinned CLI links the stand-ins, not the libraries that build word lists at start", () => {
  // `go version -m`: each dependency's line, then its replacement's on the next line.
  const lines = execFileSync("go", ["version", "-m", toolPath("pulumi")], { encoding: "utf8" }).split("\n").map((line) => line.trim().split(/\s+/));
  for (const library of ["github.com/nbutton23/zxcvbn-go", "github.com/ccojocar/zxcvbn-go"]) {
    const at = lines.findIndex(([kind, path]) => kind === "dep" && path === library);
    assert.ok(at >= 0, `${library} is not in the binary`);
    assert.deepEqual(lines[at + 1]?.slice(0, 2), ["=>", `./zxcvbn/${library.split("/")[1]}`], `${library} is linked as the real module`);
  }
});
