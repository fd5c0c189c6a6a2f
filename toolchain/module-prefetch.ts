// On a cold machine a tool's `go build` first downloads its modules, one tool after another, with
// the cores idle: about a quarter of the cold toolchain's time (the CLI 404 s cold against 288 s with
// its modules at hand, the provider 659 s against 539 s). While the first tool compiles, this loads
// the later tools' packages (`go list -deps`, which downloads what they import and compiles
// nothing), so their modules are in the module cache when their builds come. Go's module cache
// locks each module, so a build and a prefetch that want the same one download it once.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { toolchainDir, type Tool } from "./tools.ts";

/**
 * Starts, in the background, one `go list -deps` per module folder of `later` (the tools built
 * after the first), with `env` (the builds' Go environment). Returns a function that ends those
 * still running: the builds do not wait for them, and none outlives the toolchain's build.
 */
export function prefetchModules(later: readonly Tool[], env: NodeJS.ProcessEnv): () => void {
  const packagesByFolder = new Map<string, string[]>();
  for (const tool of later) packagesByFolder.set(tool.moduleDir, [...(packagesByFolder.get(tool.moduleDir) ?? []), tool.goPackage]);
  const running: ChildProcess[] = [];
  for (const [folder, packages] of packagesByFolder) {
    // -e: a package whose embedded files its build makes first (the provider's schema) still lists.
    const child = spawn("go", ["list", "-e", "-deps", "-f", "{{.ImportPath}}", ...packages], { cwd: join(toolchainDir, folder), env, stdio: "ignore" });
    // A failed prefetch costs nothing but its time: the build downloads what it still lacks.
    child.on("error", () => undefined);
    running.push(child);
  }
  return () => {
    for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  };
}
