// buildah, on a container storage of appstack's own under the cache (never /var/lib/containers),
// so that what the image build finds there is only what it made.
import { join } from "node:path";
import { cacheRoot } from "../tools.ts";
import { run, type RunOptions } from "./run.ts";

export function imagesDir(): string {
  return join(cacheRoot(), "images");
}

/** The storage flags every buildah call takes. */
export function storageArgs(dir: string = imagesDir()): string[] {
  return ["--root", join(dir, "storage"), "--runroot", join(dir, "run"), "--storage-driver", "overlay"];
}

export function buildah(args: readonly string[], options: RunOptions): string {
  return run("buildah", [...storageArgs(), ...args], options);
}

export interface BudRequest {
  readonly dockerfile: string;
  readonly context: string;
  readonly tag: string;
  readonly buildArgs: Readonly<Record<string, string>>;
  /** Host paths mounted at the same path into every RUN step (the Go caches, the CA bundle). */
  readonly sameVolumes?: readonly { readonly path: string; readonly readOnly?: boolean }[];
}

/**
 * `buildah bud` of one Dockerfile: base images only from the local storage, the host's network
 * (the Go module proxy, npm, Debian), and the layers kept so that a rebuild reruns only what changed.
 */
export function budArgs(request: BudRequest): string[] {
  return [
    "bud",
    "--layers",
    "--pull=never",
    "--network=host",
    "--format=oci",
    ...Object.entries(request.buildArgs).flatMap(([name, value]) => ["--build-arg", `${name}=${value}`]),
    ...(request.sameVolumes ?? []).flatMap(({ path, readOnly }) => ["--volume", `${path}:${path}${readOnly ? ":ro" : ""}`]),
    "--file",
    request.dockerfile,
    "--tag",
    request.tag,
    request.context,
  ];
}

/** The image's ID, or nothing when the storage has no image of that name. */
export function imageId(name: string): string | undefined {
  try {
    return buildah(["inspect", "--type", "image", "--format", "{{.FromImageID}}", name], { timeoutSeconds: 60 }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The image's unpacked size as buildah reports it ("512 MB"). */
export function imageSize(name: string): string {
  const images = JSON.parse(buildah(["images", "--json", name], { timeoutSeconds: 60 })) as { size?: string }[];
  return images[0]?.size ?? "unknown";
}
