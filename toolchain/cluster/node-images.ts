// Images for the real node. Nothing can be pulled here, so the node's images are OCI archives made
// on this machine (buildah from scratch, on appstack's image storage) and imported into the node's
// containerd. `loadImage` is the one way in, for these and for any other archive.
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { buildah } from "../images/buildah.ts";
import { run as runBounded } from "../images/run.ts";
import { cacheRoot, toolByName, toolCacheDir, toolPath } from "../tools.ts";
import { pauseImageName } from "./node-config.ts";

const commandTimeoutSeconds = 120;

export interface ImageArchive {
  /** The image's name inside the archive (and in the node's containerd after loadImage). */
  readonly name: string;
  readonly path: string;
}

function run(command: string, args: string[]): string {
  return runBounded(command, args, { timeoutSeconds: commandTimeoutSeconds }).trim();
}

/**
 * An image of the files in `rootfs` with `config` (buildah config flags), as an OCI archive in the cache, built once per
 * name (the tag carries a digest of the content). buildah runs as for `appstack image` (images/buildah.ts), on
 * appstack's own image storage, never the machine's; the image is removed from it once in its archive.
 */
function cachedArchive(name: string, populate: (rootfs: string) => void, config: string[]): ImageArchive {
  const path = join(cacheRoot(), "node-images", `${name.replace(/[/:]/g, "_")}.oci.tar`);
  if (existsSync(path)) return { name, path };
  mkdirSync(dirname(path), { recursive: true });
  const work = mkdtempSync(join(tmpdir(), "appstack-image-"));
  const step = (...args: string[]) => buildah(args, { timeoutSeconds: commandTimeoutSeconds }).trim();
  const partial = `${path}.partial-${process.pid}`;
  let container: string | undefined;
  try {
    const rootfs = join(work, "rootfs");
    mkdirSync(rootfs);
    populate(rootfs);
    container = step("from", "scratch");
    step("copy", container, rootfs, "/");
    step("config", ...config, container);
    step("commit", "-q", "--rm", container, name);
    container = undefined;
    step("push", "-q", name, `oci-archive:${partial}:${name}`);
    step("rmi", name);
    // A rename is atomic: an interrupted build never leaves an archive that looks finished.
    renameSync(partial, path);
  } finally {
    // A failed step's working container goes too (its error is the one that counts).
    if (container) {
      try {
        buildah(["rm", container], { timeoutSeconds: commandTimeoutSeconds });
      } catch {
        /* the first error is thrown */
      }
    }
    rmSync(partial, { force: true });
    rmSync(work, { recursive: true, force: true });
  }
  return { name, path };
}

/** The pod sandbox image: toolchain/pause, alone. Its tag is the pause build's cache key. */
export function pauseImage(): ImageArchive {
  const tag = basename(toolCacheDir(toolByName("pause"))).replace(/^pause-/, "");
  return cachedArchive(`${pauseImageName}:${tag}`, (rootfs) => copyFileSync(toolPath("pause"), join(rootfs, "pause")), ["--entrypoint", '["/pause"]']);
}

export const busyboxBinary = "/bin/busybox";

/**
 * A busybox image from the machine's Debian busybox-static (a shell and the usual commands, httpd and
 * wget among them): the volume provisioner's helper pods run its shell. The tag is the binary's digest.
 */
export function busyboxImage(): ImageArchive {
  if (!existsSync(busyboxBinary)) throw new Error(`${busyboxBinary} is missing: the real node's busybox image needs Debian's busybox-static (apt-get install busybox-static)`);
  const digest = createHash("sha256").update(readFileSync(busyboxBinary)).digest("hex").slice(0, 12);
  return cachedArchive(`appstack.local/busybox:${digest}`, (rootfs) => {
    mkdirSync(join(rootfs, "bin"));
    copyFileSync(busyboxBinary, join(rootfs, "bin", "busybox"));
    const applets = run(busyboxBinary, ["--list"]).split("\n").filter((applet) => applet && applet !== "busybox");
    for (const applet of applets) symlinkSync("busybox", join(rootfs, "bin", applet));
    mkdirSync(join(rootfs, "tmp"));
  }, ["--cmd", "/bin/sh"]);
}

/** Imports an OCI archive into a real node's containerd, where the kubelet finds it by its name. */
export function importImage(containerdSocket: string, archivePath: string): void {
  run("ctr", ["--address", containerdSocket, "--namespace", "k8s.io", "images", "import", archivePath]);
}

