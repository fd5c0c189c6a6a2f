// The `appstack` command: wiring only. Each verb lives with the code it drives.
import { buildToolchain } from "../toolchain/build.ts";
import { clusterCommand, clusterUp, defaultClusterName } from "../toolchain/cluster/command.ts";

const usage = `usage: appstack <command>
  run                    the main job: start the local cluster (when no cluster is configured)
  toolchain              build the pinned toolchain from Go modules (cached)
  cluster up|down|env|list [name]   manage a local control plane`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case "toolchain":
      buildToolchain();
      return;
    case "cluster":
      await clusterCommand(rest);
      return;
    case "run":
      await clusterUp(defaultClusterName);
      console.error("stop it with: npx appstack cluster down");
      return;
    default:
      console.error(usage);
      process.exitCode = command === undefined || command === "help" ? 0 : 1;
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
