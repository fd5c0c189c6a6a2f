// The pinned toolchain: which binaries appstack needs, which Go module pins each one, and where the
// built binary lives. Building is in build.ts; everything else only asks for paths.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const toolchainDir = dirname(fileURLToPath(import.meta.url));
export const repoRoot = dirname(toolchainDir);

export interface Tool {
  /** File name of the built binary. */
  readonly binary: string;
  /** Folder under toolchain/ whose go.mod pins it. */
  readonly moduleDir: string;
  /** Go package to build, as resolved inside moduleDir. */
  readonly goPackage: string;
  /** Module whose version in go.mod names the release; none for a program of our own (pause). */
  readonly pinnedModule?: string;
  /** Extra linker flags, given the pinned version. */
  readonly ldflags?: (version: string) => string[];
  /** Built with CGO_ENABLED=0, as the operator image builds it: the image's build then reuses the compiled packages. */
  readonly noCgo?: boolean;
}

const pulumiVersionFlag = "github.com/pulumi/pulumi/sdk/v3/go/common/version.Version";
const providerVersionFlag = "github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version";

export const tools: readonly Tool[] = [
  {
    binary: "pulumi",
    moduleDir: "pulumi",
    goPackage: "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi",
    pinnedModule: "github.com/pulumi/pulumi/pkg/v3",
    // Without a version the Automation API refuses the CLI ("minimum version" check).
    ldflags: (version) => [`-X ${pulumiVersionFlag}=${version}`],
  },
  {
    // Only for `pulumi up` of this repository's own program (the operator's inline programs need no
    // language host). The Go module proxy serves no pulumi-language-nodejs module; sdk/v3 v3.65.0 is
    // the last release that carries the host inside the SDK module. It predates runtime options, so
    // `appstack pulumi` loads tsx through NODE_OPTIONS instead of Pulumi.yaml's nodeargs.
    binary: "pulumi-language-nodejs",
    moduleDir: "pulumi-language-nodejs",
    goPackage: "github.com/pulumi/pulumi/sdk/v3/nodejs/cmd/pulumi-language-nodejs",
    pinnedModule: "github.com/pulumi/pulumi/sdk/v3",
  },
  {
    binary: "pulumi-resource-kubernetes",
    moduleDir: "kubernetes-provider",
    goPackage: ".",
    pinnedModule: "github.com/pulumi/pulumi-kubernetes/provider/v4",
    // The provider module has no release tags of its own: its version is the npm SDK's.
    ldflags: () => [`-X ${providerVersionFlag}=${kubernetesProviderVersion()}`],
    // As the Dockerfile builds it (see there why), so that a first image build compiles nothing again.
    noCgo: true,
  },
  ...["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"].map(
    (name): Tool => ({
      binary: name,
      moduleDir: "kube",
      goPackage: `k8s.io/kubernetes/cmd/${name}`,
      pinnedModule: "k8s.io/kubernetes",
    }),
  ),
  { binary: "etcd", moduleDir: "kube", goPackage: "go.etcd.io/etcd/server/v3", pinnedModule: "go.etcd.io/etcd/server/v3" },
  { binary: "kwok", moduleDir: "kwok", goPackage: "sigs.k8s.io/kwok/cmd/kwok", pinnedModule: "sigs.k8s.io/kwok" },
  // Tests only: how kstatus (Flux's, kapply's and Config Sync's reading of status) reads an object.
  { binary: "kstatus", moduleDir: "kstatus", goPackage: ".", pinnedModule: "sigs.k8s.io/cli-utils" },
];

/**
 * Only a cluster with a real node (ClusterOptions.realNode) runs these; they are built when such a
 * cluster is asked for, not by `npm run toolchain`, so the default cold build does not pay for them.
 */
export const nodeTools: readonly Tool[] = [
  // Their own module (the same k8s.io/kubernetes pin as toolchain/kube): the kubelet needs modules the
  // control plane does not, and a changed toolchain/kube/go.sum would rebuild every control-plane binary.
  ...["kubelet", "kube-proxy"].map(
    (name): Tool => ({ binary: name, moduleDir: "kube-node", goPackage: `k8s.io/kubernetes/cmd/${name}`, pinnedModule: "k8s.io/kubernetes" }),
  ),
  // The pod sandbox process of the node's pause image (nothing can be pulled here).
  { binary: "pause", moduleDir: "pause", goPackage: "." },
  // Binds PersistentVolumeClaims to folders on the node; runs as a process beside the cluster.
  {
    binary: "local-path-provisioner",
    moduleDir: "local-path-provisioner",
    goPackage: "github.com/rancher/local-path-provisioner",
    pinnedModule: "github.com/rancher/local-path-provisioner",
  },
  // The node's cluster DNS (cluster/node-dns.ts), a process beside the cluster. Its main is ours: it names the
  // plugins it runs.
  { binary: "coredns", moduleDir: "coredns", goPackage: ".", pinnedModule: "github.com/coredns/coredns" },
];

/**
 * Built for one test only, on its first run (test/helpers/rule-check.ts), not by `npm run toolchain`
 * nor for `npm start`: Prometheus's rule-file and PromQL parsers, to check the alerts the install
 * ships (test/unit/prometheus-rule.test.ts). A main of ours on those two packages, not promtool,
 * whose build compiles several times as many packages (docs/development/toolchain.md).
 */
export const testTools: readonly Tool[] = [
  { binary: "rule-check", moduleDir: "rule-check", goPackage: ".", pinnedModule: "github.com/prometheus/prometheus" },
];

/** What upstream's release build stamps: without it the API server's /version says v0.0.0-master. */
function kubeVersionFlags(version: string): string[] {
  const [major, minor] = version.slice(1).split(".");
  const flag = "k8s.io/component-base/version";
  return [`-X ${flag}.gitVersion=${version}`, `-X ${flag}.gitMajor=${major}`, `-X ${flag}.gitMinor=${minor}`, `-X ${flag}.gitTreeState=clean`];
}

/**
 * The oldest Kubernetes minor appstack supports (docs/install.md): its control plane, for a cluster
 * that asks for it (ClusterOptions.controlPlane), built then and not by `npm run toolchain`. Its own
 * module, so that its pin never touches toolchain/kube's. etcd and kwok stay toolchain/kube's and
 * toolchain/kwok's. Not found by toolByName: these binaries share the current ones' names.
 */
export const oldestControlPlaneTools: readonly Tool[] = ["kube-apiserver", "kube-controller-manager", "kube-scheduler"].map(
  (name): Tool => ({ binary: name, moduleDir: "kube-1.30", goPackage: `k8s.io/kubernetes/cmd/${name}`, pinnedModule: "k8s.io/kubernetes", ldflags: kubeVersionFlags }),
);

/**
 * What running this repository's install program needs (`appstack pulumi`, `appstack manifests`):
 * the CLI, the Node.js language host that runs the program, and the Kubernetes provider; no
 * cluster's binaries.
 */
export const pulumiTools: readonly ToolName[] = ["pulumi", "pulumi-language-nodejs", "pulumi-resource-kubernetes"];

export type ToolName = "pulumi" | "pulumi-language-nodejs" | "pulumi-resource-kubernetes" | "kube-apiserver" | "kube-controller-manager" | "kube-scheduler" | "kubectl" | "etcd" | "kwok" | "kstatus" | NodeToolName | "rule-check";
export type NodeToolName = "kubelet" | "kube-proxy" | "pause" | "local-path-provisioner" | "coredns";

export function cacheRoot(): string {
  const base = process.env["APPSTACK_CACHE_DIR"] ?? join(process.env["XDG_CACHE_HOME"] ?? join(homedir(), ".cache"), "appstack");
  return base;
}

/** The version of `module` that toolchain/<moduleDir>/go.mod requires. */
export function pinnedVersion(tool: Tool): string {
  if (!tool.pinnedModule) return "local";
  const goMod = readFileSync(join(toolchainDir, tool.moduleDir, "go.mod"), "utf8");
  const escaped = tool.pinnedModule.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const match = new RegExp(`^\\s*(?:require\\s+)?${escaped}\\s+(v\\S+)`, "m").exec(goMod);
  if (!match?.[1]) throw new Error(`toolchain/${tool.moduleDir}/go.mod does not require ${tool.pinnedModule}`);
  return match[1];
}

/**
 * The files of ours a tool's build reads, relative to its module folder: a main package of ours,
 * the patches its build applies to the pinned module (`patches/`), and the modules that stand in
 * for pinned ones (`replace` to a folder: their go.mod and Go files).
 */
function goSources(moduleDir: string): string[] {
  return readdirSync(moduleDir, { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".go") || file.endsWith(".patch") || (file.endsWith("go.mod") && file !== "go.mod"))
    .sort();
}

/**
 * Where a module of ours keeps its patches to the module it pins, one `.patch` file per change, each
 * with a header saying why (docs/development/toolchain.md lists them): toolchain/patch-module applies them.
 */
export const patchesDir = "patches";

/** The applier of the patches, a Go program that the Dockerfile's build runs too. */
export const patchModuleDir = join(toolchainDir, "patch-module");

/** The `.patch` files of a tool, in the order they are applied; none for most. */
export function patchFiles(tool: Tool): string[] {
  const dir = join(toolchainDir, tool.moduleDir, patchesDir);
  return existsSync(dir) ? readdirSync(dir).filter((file) => file.endsWith(".patch")).sort() : [];
}

/** What a tool's patches change: the first line of each one's Description field. */
export function patchSubjects(tool: Tool): string[] {
  return patchFiles(tool).map((file) => {
    const text = readFileSync(join(toolchainDir, tool.moduleDir, patchesDir, file), "utf8");
    return /^Description:\s*(.+)$/m.exec(text)?.[1]?.trim() ?? file;
  });
}

/**
 * Where toolchain/patch-module keeps the patched copies of pinned modules, each named by module,
 * version and a digest of its patches, made whole before it is renamed into place: builds at once
 * share a copy and never see a partial one. The operator image's build makes its copy at the same
 * path (toolchain/images), so that the Go build cache, whose keys hold a package's folder, serves it.
 */
export function patchedModulesDir(): string {
  return join(cacheRoot(), "patched-modules");
}

/** The version of the Kubernetes provider plugin that @pulumi/kubernetes asks the engine for. */
export function kubernetesProviderVersion(): string {
  const pkg = JSON.parse(readFileSync(join(repoRoot, "node_modules/@pulumi/kubernetes/package.json"), "utf8")) as { version: string };
  return pkg.version;
}

/**
 * The files whose bytes key a tool's build: its go.mod and go.sum, the files of ours its build
 * reads (goSources), and for a patched tool the applier's go.mod, go.sum and Go files, since the
 * applier makes the copy the build compiles.
 */
export function buildInputs(tool: Tool): string[] {
  const moduleDir = join(toolchainDir, tool.moduleDir);
  const own = ["go.mod", "go.sum", ...goSources(moduleDir)].map((file) => join(moduleDir, file));
  if (patchFiles(tool).length === 0) return own;
  const applier = readdirSync(patchModuleDir).filter((file) => file.endsWith(".go") && !file.endsWith("_test.go")).sort();
  return [...own, ...["go.mod", "go.sum", ...applier].map((file) => join(patchModuleDir, file))];
}

/**
 * The cache folder of one tool: its name, its pinned version, and a digest of everything that goes
 * into the build (buildInputs: go.mod, go.sum, the Go files of a main package of ours, its patches
 * and their applier; flags), so that a changed pin, main or patch rebuilds and nothing else does.
 */
export function toolCacheDir(tool: Tool): string {
  const version = pinnedVersion(tool);
  const digest = createHash("sha256");
  for (const file of buildInputs(tool)) digest.update(readFileSync(file));
  digest.update(tool.goPackage);
  digest.update((tool.ldflags?.(version) ?? []).join(" "));
  if (tool.noCgo) digest.update("CGO_ENABLED=0");
  return join(cacheRoot(), `${tool.binary}-${version}-${digest.digest("hex").slice(0, 10)}`);
}

export function toolByName(name: ToolName): Tool {
  const tool = [...tools, ...nodeTools, ...testTools].find((t) => t.binary === name);
  if (!tool) throw new Error(`unknown tool ${name}`);
  return tool;
}

/** Where a tool's binary is, built or not: `<cache dir>/bin/<binary>`, the layout PulumiCommand expects. */
export function toolBinary(tool: Tool): string {
  return join(toolCacheDir(tool), "bin", tool.binary);
}

/** The first `binary` on PATH, if any. */
export function findOnPath(binary: string): string | undefined {
  return (process.env["PATH"] ?? "").split(":").filter(Boolean).map((dir) => join(dir, binary)).find((path) => existsSync(path));
}

/**
 * Absolute path of a tool: the cached build, else one on PATH (the operator image installs the
 * pinned binaries there, and holds none of toolchain/'s Go modules, so no cached build's name);
 * throws with the command that builds it when neither exists.
 */
export function toolPath(name: ToolName): string {
  const tool = toolByName(name);
  const path = existsSync(join(toolchainDir, tool.moduleDir, "go.mod")) ? toolBinary(tool) : undefined;
  if (path && existsSync(path)) return path;
  const onPath = findOnPath(name);
  if (onPath) return onPath;
  throw new Error(`${name} is not built yet: run \`npm run toolchain\` first (expected ${path ?? `toolchain/${tool.moduleDir}/go.mod`})`);
}

/**
 * The pinned binaries the Pulumi engine runs, in the shape of operator/pulumi/engine.ts's
 * EngineBinaries: the wiring (operator/cmd/) passes them in the engine's settings. Getters, so
 * that each is looked up where it is used, as when the engine looked them up itself (a toolchain
 * built after the start is found; a missing one fails the operation that needs it).
 */
export function engineBinaries() {
  return {
    get cliRoot() {
      return dirname(dirname(toolPath("pulumi")));
    },
    kubernetesProvider: {
      get version() {
        return kubernetesProviderVersion();
      },
      get path() {
        return toolPath("pulumi-resource-kubernetes");
      },
    },
  };
}
