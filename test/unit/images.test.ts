// The pure parts of `appstack image`: the pins it reads, the names it gives, the commands it runs.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { budArgs, storageArgs } from "../../toolchain/images/buildah.ts";
import { mmdebstrapArgs, releaseDate } from "../../toolchain/images/debian.ts";
import { archivePath, builtImageNamed, imageSpecs, imageTags } from "../../toolchain/images/images.ts";
import { aptSources, cacheKey, goToolchainModule, goVersion, nodeVersion, projectVersion } from "../../toolchain/images/recipes.ts";
import { boundedCommand } from "../../toolchain/images/run.ts";
import { patchFiles, repoRoot, tools } from "../../toolchain/tools.ts";

const bases = { debian: "localhost/appstack-base/debian:bookworm-k1", golang: "localhost/appstack-base/golang:1.26.8-bookworm-k2", node: "localhost/appstack-base/node:24.21.0-bookworm-k3" };
const caches = { modCache: "/root/go/pkg/mod", buildCache: "/root/.cache/go-build" };

test("the Go base is the release every toolchain go.mod asks for, from the proxy's toolchain module", () => {
  const goMod = readFileSync(join(repoRoot, "toolchain/pulumi/go.mod"), "utf8");
  assert.equal(goVersion(), /^go (\S+)$/m.exec(goMod)?.[1]);
  assert.equal(goToolchainModule("1.26.8"), "golang.org/toolchain@v0.0.1-go1.26.8.linux-amd64");
});

test("the Node base is the lockfile's Node.js, and the operator image is tagged with the project's version", () => {
  const lock = JSON.parse(readFileSync(join(repoRoot, "package-lock.json"), "utf8")) as { version: string; packages: Record<string, { version: string }> };
  assert.equal(nodeVersion(), lock.packages["node_modules/node"]?.version);
  assert.match(nodeVersion(), /^24\./);
  assert.equal(projectVersion(), lock.version);
});

test("a cache key depends on every input and not on the order of an object's fields", () => {
  assert.equal(cacheKey({ a: 1, b: ["x", "y"] }), cacheKey({ b: ["x", "y"], a: 1 }));
  assert.notEqual(cacheKey({ a: 1, b: ["x", "y"] }), cacheKey({ a: 1, b: ["y", "x"] }));
  assert.notEqual(cacheKey({ releases: ["2026-11-01"] }), cacheKey({ releases: ["2026-11-08"] }));
  assert.match(cacheKey({}), /^[0-9a-f]{12}$/);
});

test("the Debian root file system comes from the three bookworm suites, and the Release date names their state", () => {
  const args = mmdebstrapArgs("/tmp/rootfs.tar");
  assert.ok(args.includes("--variant=minbase"));
  assert.ok(args.includes('--aptopt=Dir::Cache::pkgcache ""'), "no apt package cache left in the images' layers");
  assert.deepEqual(args.slice(-4), ["/tmp/rootfs.tar", ...aptSources()]);
  assert.deepEqual(aptSources(), [
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
  ]);
  assert.equal(releaseDate("Origin: Debian\nDate: Sat, 15 Nov 2026 09:39:24 UTC\nValid-Until: x\n", "u"), "2026-11-15T09:39:24.000Z");
  assert.throws(() => releaseDate("Origin: Debian\n", "http://x/InRelease"), /http:\/\/x\/InRelease: no Date field/);
});

test("the operator image is the repository's Dockerfile on the local bases, with the host's Go caches at the same paths", () => {
  const [operator, http, memcached] = imageSpecs(bases, caches, "0.1.0", "/root/.cache/appstack/patched-modules");
  assert.equal(operator?.bud.dockerfile, join(repoRoot, "Dockerfile"));
  assert.equal(operator?.archiveName, "docker.io/library/appstack:0.1.0");
  const args = budArgs(operator.bud);
  assert.deepEqual(args.slice(0, 5), ["bud", "--layers", "--pull=never", "--network=host", "--format=oci"]);
  for (const pair of [`GO_IMAGE=${bases.golang}`, `NODE_IMAGE=${bases.node}`, `DEBIAN_IMAGE=${bases.debian}`, "APPSTACK_VERSION=0.1.0", "PATCHED_MODULES=/root/.cache/appstack/patched-modules", "/root/go/pkg/mod:/root/go/pkg/mod", "/root/.cache/go-build:/root/.cache/go-build", "/etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro"]) {
    assert.ok(args.includes(pair), pair);
  }
  assert.deepEqual(args.slice(-5), ["--file", join(repoRoot, "Dockerfile"), "--tag", "localhost/appstack:0.1.0", repoRoot]);
  assert.deepEqual(http?.bud.buildArgs, { DEBIAN_IMAGE: bases.debian });
  assert.equal(memcached?.archiveName, "localhost/appstack/memcached:0.1.0");
  assert.equal(budArgs(memcached.bud).includes("--volume"), false);
  assert.equal(archivePath("/c/oci", memcached), "/c/oci/memcached-0.1.0.oci.tar");
});

test("the Dockerfile's base images are build arguments whose defaults are the public images", () => {
  const dockerfile = readFileSync(join(repoRoot, "Dockerfile"), "utf8");
  const beforeFirstFrom = dockerfile.slice(0, dockerfile.indexOf("\nFROM "));
  assert.match(beforeFirstFrom, /^ARG GO_IMAGE=golang:1\.26-bookworm$/m);
  assert.match(beforeFirstFrom, /^ARG NODE_IMAGE=node:24-bookworm-slim$/m);
  assert.match(beforeFirstFrom, /^ARG DEBIAN_IMAGE=debian:bookworm-slim$/m);
  // The image is the last stage: Debian, with Node.js's binary from the Node stage.
  assert.deepEqual([...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]), ["${GO_IMAGE}", "${NODE_IMAGE}", "${DEBIAN_IMAGE}"]);
});

test("the Dockerfile builds each patched tool from the copy toolchain/patch-module makes, as build.ts does, under PATCHED_MODULES", () => {
  const dockerfile = readFileSync(join(repoRoot, "Dockerfile"), "utf8");
  const patched = tools.filter((tool) => patchFiles(tool).length > 0);
  assert.deepEqual(patched.map((tool) => tool.binary), ["pulumi", "pulumi-resource-kubernetes"]);
  for (const tool of patched) {
    const run = new RegExp(`go -C toolchain/patch-module run \\. -module ${tool.pinnedModule} -into "\\$PATCHED_MODULES" -modfile (\\S+) \\.\\./${tool.moduleDir} \\\\\n`).exec(dockerfile);
    assert.ok(run, `no patch-module run for ${tool.binary}`);
    assert.match(dockerfile, new RegExp(`go build -modfile ${run[1]} -o /out/${tool.binary} `), `${tool.binary} is not built with the copy's go.mod`);
  }
  assert.match(dockerfile, /^COPY toolchain\/patch-module\/ toolchain\/patch-module\/$/m);
  assert.match(readFileSync(join(repoRoot, ".dockerignore"), "utf8"), /^!toolchain\/patch-module$/m);
  assert.doesNotMatch(dockerfile, /\/tmp\/appstack-/);
});

test("buildah keeps its images under the given folder, and every command has a deadline", () => {
  assert.deepEqual(storageArgs("/c/images"), ["--root", "/c/images/storage", "--runroot", "/c/images/run", "--storage-driver", "overlay"]);
  assert.deepEqual(boundedCommand("buildah", ["images"], 60), ["timeout", ["--kill-after=30", "60s", "buildah", "images"]]);
});

test("`cluster load` knows the built images by each of their names, and the real node's samples name exactly them", () => {
  const version = projectVersion();
  assert.equal(builtImageNamed("operator", version), "operator");
  assert.equal(builtImageNamed(`appstack:${version}`, version), "operator");
  assert.equal(builtImageNamed(`docker.io/library/appstack:${version}`, version), "operator");
  assert.equal(builtImageNamed(`localhost/appstack:${version}`, version), "operator");
  assert.equal(builtImageNamed(`localhost/appstack/http:${version}`, version), "http");
  assert.equal(builtImageNamed("memcached", version), "memcached");
  assert.equal(builtImageNamed("nginx:1.27", version), undefined);
  assert.equal(builtImageNamed("localhost/appstack/http:0.0.9", version), undefined);
  const sampleImage = (file: string) => /^\s+image: (\S+)$/m.exec(readFileSync(join(repoRoot, "crds/samples/real-node", file), "utf8"))?.[1];
  assert.equal(sampleImage("app.yaml"), imageTags("http", version).archiveName);
  assert.equal(sampleImage("memcached.yaml"), imageTags("memcached", version).archiveName);
});
