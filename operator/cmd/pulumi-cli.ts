// `appstack pulumi <args>`: the pinned Pulumi CLI on this repository's own program (the install
// program), with the pinned language host and provider and nothing downloaded.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { homedir } from "node:os";
import { engineBinaries, repoRoot, toolPath } from "../../toolchain/tools.ts";
import { installProviderPlugin } from "../pulumi/engine.ts";
import { defaultOperationTimeoutMs } from "../pulumi/deadline-runner.ts";
import { StateIo } from "../pulumi/state-io.ts";

export interface PulumiCliOptions {
  /** Set over this process's environment (a backend, a home, a passphrase of the caller's). */
  readonly env?: Readonly<Record<string, string>>;
  /** Where the CLI's standard output goes: this process's (the default), or its standard error, when the caller prints a result of its own. */
  readonly stdout?: "stdout" | "stderr";
}

export async function runPulumiCli(args: readonly string[], options: PulumiCliOptions = {}): Promise<number> {
  const own = { ...process.env, ...options.env };
  const pulumiHome = own["PULUMI_HOME"] ?? join(homedir(), ".pulumi");
  await installProviderPlugin(pulumiHome, new StateIo(defaultOperationTimeoutMs), engineBinaries().kubernetesProvider);
  const env = {
    ...own,
    // The language host runs the program with the first `node` on PATH: the one running appstack.
    PATH: [dirname(toolPath("pulumi")), dirname(toolPath("pulumi-language-nodejs")), dirname(process.execPath), process.env["PATH"] ?? ""].join(":"),
    PULUMI_HOME: pulumiHome,
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    // The language host predates Pulumi.yaml's nodeargs: tsx comes in through the environment.
    NODE_OPTIONS: [own["NODE_OPTIONS"], "--import=tsx"].filter(Boolean).join(" "),
  };
  const stdout = options.stdout === "stderr" ? process.stderr : "inherit";
  const result = spawnSync(toolPath("pulumi"), args, { cwd: repoRoot, env, stdio: ["inherit", stdout, "inherit"] });
  return result.status ?? 1;
}
