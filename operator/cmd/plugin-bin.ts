// The kubectl plugin on a PATH the main job prints: `kubectl appstack <command>` finds an
// executable named kubectl-appstack on PATH (kubectl's plugin convention). npm links the package's
// `bin` (kubectl-appstack among them) for a package installed as a dependency, never for the
// project itself, so the main job writes its own into a folder it controls, beside the pinned
// kubectl, and prints `export PATH=<folder>:$PATH`.
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot, toolPath } from "../../toolchain/tools.ts";

/** Writes `kubectl-appstack` (this Node and this checkout's command line) and `kubectl` into `dir`; returns it. */
export function installPluginBin(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const plugin = join(dir, "kubectl-appstack");
  // This Node, not whichever `node` the person's PATH has: the command line needs Node 24's.
  writeFileSync(plugin, `#!/bin/sh\nexec '${process.execPath}' '${join(repoRoot, "operator", "cmd", "appstack.mjs")}' "$@"\n`);
  chmodSync(plugin, 0o755);
  const kubectl = join(dir, "kubectl");
  rmSync(kubectl, { force: true });
  symlinkSync(toolPath("kubectl"), kubectl);
  return dir;
}
