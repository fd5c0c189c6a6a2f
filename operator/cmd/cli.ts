// The `appstack` command: wiring only. Each verb lives with the code it drives.
import { mkdirSync, writeFileSync } from "node:fs";
import { renderedCrds, yamlDir } from "../../crds/yaml.ts";
import { buildToolchain } from "../../toolchain/build.ts";
import { clusterCommand } from "../../toolchain/cluster/command.ts";
import { spawnSync } from "node:child_process";
import { toolPath } from "../../toolchain/tools.ts";
import { UsageError } from "./flags.ts";
import { runOperator } from "./main.ts";
import { runPreviewCli } from "./preview-cli.ts";
import { runPulumiCli } from "./pulumi-cli.ts";
import { runMainJob } from "./run.ts";

const usage = `usage: appstack <command>
  run [--samples]        the main job: the operator in the foreground, on a local cluster
                         unless --kubeconfig=PATH or KUBECONFIG names one; Ctrl-C stops all
  preview -f FILE [--json] [--refresh]
                         what the operator would do with the objects in FILE, changing nothing;
                         exit 0 no changes, 2 changes, 1 error
  pulumi <args>          the pinned Pulumi CLI on this folder's install program (pulumi up, preview, destroy)
  kubectl <args>         the pinned kubectl, against KUBECONFIG
  operator [flags]       the operator alone, against the configured cluster (in-cluster mode)
  toolchain              build the pinned toolchain from Go modules (cached)
  crds                   write crds/yaml/ from the TypeScript CRD definitions
  cluster up|down|env|list [name]   manage a local control plane`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if ((command === "toolchain" || command === "crds") && rest.length) throw new UsageError(`appstack ${command} takes no arguments\n${usage}`);
  switch (command) {
    case "kubectl":
      buildToolchain(() => undefined);
      process.exitCode = spawnSync(toolPath("kubectl"), rest, { stdio: "inherit" }).status ?? 1;
      return;
    case "toolchain":
      buildToolchain();
      return;
    case "crds":
      mkdirSync(yamlDir, { recursive: true });
      for (const [file, yaml] of renderedCrds()) writeFileSync(file, yaml);
      return;
    case "cluster":
      await clusterCommand(rest);
      return;
    case "run":
      await runMainJob(rest);
      return;
    case "pulumi":
      buildToolchain();
      process.exitCode = runPulumiCli(rest);
      return;
    case "preview":
      process.exitCode = await runPreviewCli(rest);
      return;
    case "operator":
      await runOperator(rest);
      return;
    case undefined:
    case "help":
    case "--help":
      console.error(usage);
      return;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}\n${usage}`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
