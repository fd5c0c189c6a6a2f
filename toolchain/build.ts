// Builds the pinned toolchain from Go modules into the cache, once per pin. Nothing is downloaded
// but Go modules through the Go module proxy, and nothing built lands in the work tree.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { cacheRoot, findOnPath, kubernetesProviderVersion, patchedModulesDir, patchFiles, patchModuleDir, patchSubjects, pinnedVersion, toolBinary, toolByName, toolchainDir, tools, type Tool, type ToolName } from "./tools.ts";

type Log = (line: string) => void;

function goEnvironment(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    // The machine's Go builds everything; never fetch another Go release.
    GOTOOLCHAIN: "local",
    // The committed go.sum files are the source of truth for module integrity.
    GOFLAGS: "-mod=readonly",
  };
}

function go(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): string {
  return execFileSync("go", args, { cwd, env: { ...goEnvironment(), ...env }, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
}

/** The pinned module's folder in the module cache, downloaded if it is not there yet. */
function pinnedModuleDir(tool: Tool): string {
  const moduleDir = join(toolchainDir, tool.moduleDir);
  const pinned = tool.pinnedModule ?? "";
  go(["mod", "download", `${pinned}@${pinnedVersion(tool)}`], moduleDir);
  return go(["list", "-m", "-f", "{{.Dir}}", pinned], moduleDir).trim();
}

/**
 * A tool with patches (`patches/`, docs/development/toolchain.md lists them) is built from a patched copy of its
 * pinned module: toolchain/patch-module makes the copy under the cache (patchedModulesDir, see there
 * why it is safe to share) and a go.mod of the build's own that replaces the module with it (the
 * module's own go.sum serves). A Go program, so that the Dockerfile's build, which has no Node.js,
 * runs the same one. Go's `-overlay` would change files in place, but refuses files in the module
 * cache. Returns the `go build` arguments.
 */
function patchedBuild(tool: Tool, scratch: string): string[] {
  const modfile = join(scratch, "build.mod");
  const args = ["run", ".", "-module", tool.pinnedModule ?? "", "-into", patchedModulesDir(), "-modfile", modfile, join(toolchainDir, tool.moduleDir)];
  const result = spawnSync("go", args, { cwd: patchModuleDir, env: goEnvironment(), encoding: "utf8" });
  // Its message names the patch that does not apply: the build's error, not only a line on stderr.
  if (result.status !== 0) throw new Error(`${tool.binary}: ${result.stderr.trim() || result.error?.message || "patch-module failed"}`);
  return ["-modfile", modfile];
}

/**
 * Upstream's provider main package embeds schema files that its build generates and git-ignores;
 * ours embeds the same files, made here from the pinned module exactly as upstream's generate.go
 * makes them (the schema stamped with the plugin version).
 */
function prepareKubernetesProvider(tool: Tool): void {
  const moduleDir = join(toolchainDir, tool.moduleDir);
  const source = join(pinnedModuleDir(tool), "cmd/pulumi-resource-kubernetes");
  const schema = JSON.parse(readFileSync(join(source, "schema.json"), "utf8")) as Record<string, unknown>;
  schema["version"] = kubernetesProviderVersion();
  writeFileSync(join(moduleDir, "schema-embed.json"), JSON.stringify(schema));
  writeFileSync(join(moduleDir, "terraform-mapping-embed.json"), readFileSync(join(source, "terraform-mapping.json")));
}

/** What a tool's build makes before `go build`, besides its patched copy. */
const preparations: Partial<Record<string, (tool: Tool) => void>> = {
  "pulumi-resource-kubernetes": prepareKubernetesProvider,
};

/** A `pulumi` on PATH at exactly the pinned version is used as it is, instead of building one. */
export function pulumiOnPath(): string | undefined {
  const path = findOnPath("pulumi");
  if (!path) return undefined;
  const version = spawnSync(path, ["version"], { encoding: "utf8" }).stdout.trim();
  return version === pinnedVersion(toolByName("pulumi")) ? path : undefined;
}

export function buildTool(tool: Tool, log: Log): void {
  const binary = toolBinary(tool);
  const target = dirname(binary);
  if (existsSync(binary)) {
    log(`  ${tool.binary}: cached (${binary})`);
    return;
  }
  if (tool.binary === "pulumi") {
    const onPath = pulumiOnPath();
    if (onPath) {
      // Upstream's build, so without appstack's patches and stand-in: said, not hidden.
      const lost = [...patchSubjects(tool), "the password-strength libraries' stand-in"].join("; ");
      log(`  pulumi: using ${onPath}, already at the pinned version, as it is: without appstack's changes to the CLI (${lost}), so each operation costs more CPU, more with more stacks (docs/development/toolchain.md)`);
      mkdirSync(target, { recursive: true });
      execFileSync("ln", ["-sf", onPath, binary]);
      return;
    }
  }
  const version = pinnedVersion(tool);
  log(`  ${tool.binary}: building ${tool.goPackage} (${tool.pinnedModule ?? `toolchain/${tool.moduleDir}`} ${version})...`);
  const started = Date.now();
  mkdirSync(target, { recursive: true });
  const partial = `${binary}.partial-${process.pid}`;
  const scratch = `${binary}.scratch-${process.pid}`;
  const ldflags = ["-s", "-w", ...(tool.ldflags?.(version) ?? [])].join(" ");
  try {
    mkdirSync(scratch, { recursive: true });
    preparations[tool.binary]?.(tool);
    const args = patchFiles(tool).length > 0 ? patchedBuild(tool, scratch) : [];
    go(["build", ...args, "-o", partial, "-ldflags", ldflags, tool.goPackage], join(toolchainDir, tool.moduleDir), tool.noCgo ? { CGO_ENABLED: "0" } : {});
    chmodSync(partial, 0o755);
    // A rename is atomic: an interrupted build never leaves a binary that looks finished.
    renameSync(partial, binary);
  } finally {
    rmSync(partial, { force: true });
    rmSync(scratch, { recursive: true, force: true });
  }
  log(`  ${tool.binary}: built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

/**
 * Builds the named tools that are not cached yet, by default every tool of `tools` (what
 * `npm run toolchain` builds); returns the seconds it took. A command that needs only some of them
 * (pulumiTools) names them, so that a cold machine builds no more than it runs.
 */
export function buildToolchain(log: Log = (line) => console.error(line), names: readonly ToolName[] = tools.map((tool) => tool.binary as ToolName)): number {
  const started = Date.now();
  const selected = names.map(toolByName);
  log(`toolchain: ${selected.length} binaries (${names.join(", ")}), cache ${cacheRoot()}`);
  for (const tool of selected) buildTool(tool, log);
  const seconds = (Date.now() - started) / 1000;
  log(`toolchain: ready in ${seconds.toFixed(1)} s`);
  return seconds;
}
