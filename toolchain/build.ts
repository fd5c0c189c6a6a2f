// Builds the pinned toolchain from Go modules into the cache, once per pin. Nothing is downloaded
// but Go modules through the Go module proxy, and nothing built lands in the work tree.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { cacheRoot, findOnPath, overlayDir, overlayFiles, kubernetesProviderVersion, pinnedVersion, toolBinary, toolByName, toolchainDir, tools, type Tool } from "./tools.ts";

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

/**
 * Where the module copies are made, on the host as in the Dockerfile's build: the Go build cache
 * keys a package outside GOROOT by its folder too, so at the same path the image's build, which
 * mounts the host's caches, compiles none of the copied module's packages again.
 */
const pulumiModuleCopy = "/tmp/appstack-pulumi-module";
const providerModuleCopy = "/tmp/appstack-provider-module";

/**
 * Where a build compiles a changed copy of its pinned module: a go.mod of the build's own that
 * replaces the module with `copy` (the module's own go.sum serves). Go's `-overlay` would change
 * files in place, but refuses files in the module cache. Returns the `go build` arguments.
 */
function buildWithCopy(tool: Tool, scratch: string, copy: string): string[] {
  const moduleDir = join(toolchainDir, tool.moduleDir);
  // The module's own `replace ./...` lines stay as they are: Go reads them from the module's folder.
  const modfile = join(scratch, "build.mod");
  writeFileSync(modfile, `${readFileSync(join(moduleDir, "go.mod"), "utf8")}\nreplace ${tool.pinnedModule ?? ""} => ${copy}\n`);
  cpSync(join(moduleDir, "go.sum"), join(scratch, "build.sum"));
  return ["-modfile", modfile];
}

/** The pinned module's folder in the module cache, downloaded if it is not there yet. */
function pinnedModuleDir(tool: Tool): string {
  const moduleDir = join(toolchainDir, tool.moduleDir);
  const pinned = tool.pinnedModule ?? "";
  go(["mod", "download", `${pinned}@${pinnedVersion(tool)}`], moduleDir);
  return go(["list", "-m", "-f", "{{.Dir}}", pinned], moduleDir).trim();
}

/**
 * Upstream's provider main package embeds schema files that its build generates and git-ignores;
 * ours embeds the same files, made here from the pinned module exactly as upstream's generate.go
 * makes them (the schema stamped with the plugin version). Our main also needs the provider
 * package's constructor, which upstream does not export: the build compiles a copy of the pinned
 * module with our files added to that package (`_overlay/`, see there why).
 */
function prepareKubernetesProvider(tool: Tool, scratch: string): Preparation {
  const moduleDir = join(toolchainDir, tool.moduleDir);
  const upstream = pinnedModuleDir(tool);
  const source = join(upstream, "cmd/pulumi-resource-kubernetes");
  const schema = JSON.parse(readFileSync(join(source, "schema.json"), "utf8")) as Record<string, unknown>;
  schema["version"] = kubernetesProviderVersion();
  writeFileSync(join(moduleDir, "schema-embed.json"), JSON.stringify(schema));
  writeFileSync(join(moduleDir, "terraform-mapping-embed.json"), readFileSync(join(source, "terraform-mapping.json")));
  const copy = providerModuleCopy;
  rmSync(copy, { recursive: true, force: true });
  cpSync(upstream, copy, { recursive: true });
  execFileSync("chmod", ["-R", "u+w", copy]);
  for (const file of overlayFiles(tool)) cpSync(join(moduleDir, overlayDir, file), join(copy, "pkg/provider", `zz_appstack_${file}`));
  return { args: buildWithCopy(tool, scratch, copy), cleanup: () => rmSync(copy, { recursive: true, force: true }) };
}

/**
 * The CLI is built from a copy of its pinned module with appstack's changes made by
 * toolchain/pulumi/copy-module (see there which and why), a Go program so that the Dockerfile's
 * build, which has no Node.js, makes the same copy.
 */
function preparePulumi(tool: Tool, scratch: string): Preparation {
  rmSync(pulumiModuleCopy, { recursive: true, force: true });
  go(["run", "./copy-module", pinnedModuleDir(tool), pulumiModuleCopy], join(toolchainDir, tool.moduleDir));
  return { args: buildWithCopy(tool, scratch, pulumiModuleCopy), cleanup: () => rmSync(pulumiModuleCopy, { recursive: true, force: true }) };
}

/** A build's extra `go build` arguments, and what to remove after it besides its scratch folder. */
interface Preparation {
  readonly args: string[];
  readonly cleanup?: () => void;
}

const preparations: Partial<Record<string, (tool: Tool, scratch: string) => Preparation>> = {
  "pulumi-resource-kubernetes": prepareKubernetesProvider,
  pulumi: preparePulumi,
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
      // Upstream's build, so without appstack's changes to the CLI (preparePulumi): said, not hidden.
      log(`  pulumi: using ${onPath}, already at the pinned version, as it is: without appstack's changes to the CLI (a stack's checkpoint found by name, not by listing the stacks folder; the password-strength libraries' stand-in), so each operation costs more CPU, more with more stacks (docs/development/toolchain.md)`);
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
  let preparation: Preparation | undefined;
  try {
    mkdirSync(scratch, { recursive: true });
    preparation = preparations[tool.binary]?.(tool, scratch);
    go(["build", ...(preparation?.args ?? []), "-o", partial, "-ldflags", ldflags, tool.goPackage], join(toolchainDir, tool.moduleDir), tool.noCgo ? { CGO_ENABLED: "0" } : {});
    chmodSync(partial, 0o755);
    // A rename is atomic: an interrupted build never leaves a binary that looks finished.
    renameSync(partial, binary);
  } finally {
    rmSync(partial, { force: true });
    rmSync(scratch, { recursive: true, force: true });
    preparation?.cleanup?.();
  }
  log(`  ${tool.binary}: built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

/** Builds every tool that is not cached yet; returns the seconds it took. */
export function buildToolchain(log: Log = (line) => console.error(line)): number {
  const started = Date.now();
  log(`toolchain: ${tools.length} binaries, cache ${cacheRoot()}`);
  for (const tool of tools) buildTool(tool, log);
  const seconds = (Date.now() - started) / 1000;
  log(`toolchain: ready in ${seconds.toFixed(1)} s`);
  return seconds;
}
