// `appstack cluster load IMAGE...`, as kind's `kind load`: images into a local cluster's real node,
// whose containerd pulls nothing. An IMAGE is an archive file (OCI or `docker save`: containerd
// reads both), an image `appstack image` built (by any of its names), or any other image in
// appstack's image storage (exported to a temporary archive first). Pods then use it by name, with
// a tag and no `imagePullPolicy: Always`.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildah, imageId, imagesDir } from "../images/buildah.ts";
import { archivePath, archivesDir, builtImageNamed, imageTags } from "../images/images.ts";
import { projectVersion } from "../images/recipes.ts";
import { clusterDir, readState } from "./cluster.ts";
import { importImage } from "./node-images.ts";

/** The archive to import for `reference`: the file, the built image's archive, or one made in `scratch`. */
function archiveOf(reference: string, scratch: string): string {
  if (existsSync(reference)) return reference;
  const version = projectVersion();
  const built = builtImageNamed(reference, version);
  if (built) {
    const archive = archivePath(archivesDir(), { name: built, bud: imageTags(built, version) });
    if (!existsSync(archive)) throw new Error(`${reference}: not built yet; build it with \`npx appstack image\``);
    return archive;
  }
  if (!imageId(reference)) {
    throw new Error(`${reference}: no such file, and no such image in appstack's image storage (${imagesDir()}); give an archive (docker save -o FILE IMAGE, buildah push IMAGE oci-archive:FILE:IMAGE) or build it with \`npx appstack image\``);
  }
  const archive = join(scratch, `${Date.now()}.oci.tar`);
  buildah(["push", "--quiet", reference, `oci-archive:${archive}:${reference}`], { timeoutSeconds: 900 });
  return archive;
}

/** Imports each image into the real node of the local cluster `clusterName`. */
export function loadImages(clusterName: string, references: readonly string[], log: (line: string) => void): void {
  const state = readState(clusterDir(clusterName));
  if (!state) throw new Error(`no cluster named ${clusterName}: start one with \`npx appstack cluster up ${clusterName} --real-node\``);
  if (!state.realNode) throw new Error(`cluster ${clusterName} has no real node (its kwok nodes run no containers): start it with \`npx appstack cluster up ${clusterName} --real-node\``);
  const scratch = mkdtempSync(join(tmpdir(), "appstack-load-"));
  try {
    for (const reference of references) {
      importImage(state.realNode.paths.containerdSocket, archiveOf(reference, scratch));
      log(`cluster ${clusterName}: loaded ${reference} into node ${state.realNode.nodeName}`);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
