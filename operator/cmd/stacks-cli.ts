// `appstack stacks <args>`: the pinned Pulumi CLI on the operator's own stacks (`stack ls`,
// `stack export`, `stack output --show-secrets`, ...), for a person who inspects or repairs them.
// Their secrets are kept by the operator's key service (operator/pulumi/key-service.ts), so the
// passphrase alone does not open them: this command runs a key service of its own for the
// configured passphrase while the CLI runs. The state is found as the operator finds it
// (APPSTACK_STATE_DIR, APPSTACK_BACKEND_URL, APPSTACK_PASSPHRASE); nothing is created.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { engineFolders, loadConfig } from "../manager/config.ts";
import { workspaceOptions } from "../pulumi/engine.ts";
import { projectName } from "../pulumi/stack-names.ts";
import { StateIo } from "../pulumi/state-io.ts";
import { engineBinaries, toolPath } from "../../toolchain/tools.ts";

export async function runStacksCli(args: readonly string[]): Promise<number> {
  const config = loadConfig({}, process.env, { readOnly: true });
  const { pulumiHome, workDir } = engineFolders(config.stateDir);
  if (!existsSync(workDir)) {
    process.stderr.write(`appstack stacks: no operator has used the state folder ${config.stateDir} (set APPSTACK_STATE_DIR to the operator's)\n`);
    return 1;
  }
  const settings = { backendUrl: config.backendUrl, passphrase: config.passphrase, pulumiHome, binaries: engineBinaries(), ...(config.kubeconfig ? { kubeconfig: config.kubeconfig } : {}) };
  const { envVars } = await workspaceOptions(settings, projectName, new StateIo(config.operationTimeoutMs));
  // Not spawnSync: the key service answers the CLI from this process's event loop. The engines'
  // home, as the operator's engines have it: the pinned provider plugin, no automatic logs, and
  // nothing written into the person's own ~/.pulumi.
  const child = spawn(toolPath("pulumi"), args, { cwd: workDir, env: { ...process.env, ...envVars, PULUMI_HOME: pulumiHome }, stdio: "inherit" });
  return new Promise((resolve) => {
    child.once("error", (error) => {
      process.stderr.write(`appstack stacks: ${error.message}\n`);
      resolve(1);
    });
    child.once("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}
