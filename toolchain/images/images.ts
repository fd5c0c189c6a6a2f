// Which images `appstack image` builds from which Dockerfile, under which names. Pure.
import { join } from "node:path";
import { repoRoot, toolchainDir } from "../tools.ts";
import type { BaseImages, GoCaches } from "./bases.ts";
import { imagesDir, type BudRequest } from "./buildah.ts";

export interface ImageSpec {
  readonly name: string;
  readonly bud: BudRequest;
  /**
   * The name the OCI archive gives the image: what a kubelet looks up. The operator's is the
   * install program's default image, appstack:0.1.0, which containerd spells in full.
   */
  readonly archiveName: string;
}

/**
 * The machine's CA bundle, mounted over the image's own for the build only: where HTTPS goes
 * through an inspecting proxy (as here), npm and the Go module proxy trust it only with this.
 * The node base points NODE_EXTRA_CA_CERTS at this path (bases.ts); Go reads it by default.
 */
export const caBundle = "/etc/ssl/certs/ca-certificates.crt";

/** The images `appstack image` builds: the operator, and the workloads of the real node's samples. */
export const imageNames = ["operator", "http", "memcached"] as const;
export type ImageName = (typeof imageNames)[number];

/** An image's names: its tag in appstack's image storage, and the name its archive gives it. */
export function imageTags(name: ImageName, version: string): { readonly tag: string; readonly archiveName: string } {
  if (name === "operator") return { tag: `localhost/appstack:${version}`, archiveName: `docker.io/library/appstack:${version}` };
  return { tag: `localhost/appstack/${name}:${version}`, archiveName: `localhost/appstack/${name}:${version}` };
}

/**
 * The images, the operator's built with the host's Go caches mounted at their paths and its patched
 * module copies made at the host's path for them (`patchedModules`, tools.ts patchedModulesDir), so
 * that the compiled packages of the host's `npm run toolchain` serve the image's build.
 */
export function imageSpecs(bases: BaseImages, caches: GoCaches, version: string, patchedModules: string): ImageSpec[] {
  const workload = (name: ImageName): ImageSpec => ({
    name,
    bud: {
      dockerfile: join(toolchainDir, "images", name, "Dockerfile"),
      context: join(toolchainDir, "images", name),
      tag: imageTags(name, version).tag,
      buildArgs: { DEBIAN_IMAGE: bases.debian },
    },
    archiveName: imageTags(name, version).archiveName,
  });
  return [
    {
      name: "operator",
      bud: {
        dockerfile: join(repoRoot, "Dockerfile"),
        context: repoRoot,
        tag: imageTags("operator", version).tag,
        buildArgs: { GO_IMAGE: bases.golang, NODE_IMAGE: bases.node, DEBIAN_IMAGE: bases.debian, APPSTACK_VERSION: version, PATCHED_MODULES: patchedModules },
        sameVolumes: [{ path: caches.modCache }, { path: caches.buildCache }, { path: caBundle, readOnly: true }],
      },
      archiveName: imageTags("operator", version).archiveName,
    },
    workload("http"),
    workload("memcached"),
  ];
}

/**
 * The image of `appstack image` that `reference` names, by any of its names: `http`, its tag
 * (`localhost/appstack/http:0.1.0`), or for the operator the name pods use (`appstack:0.1.0`, which
 * containerd spells `docker.io/library/appstack:0.1.0`).
 */
export function builtImageNamed(reference: string, version: string): ImageName | undefined {
  return imageNames.find((name) => {
    const { tag, archiveName } = imageTags(name, version);
    return [name, tag, archiveName, archiveName.replace(/^docker\.io\/library\//, "")].includes(reference);
  });
}

/** Where `appstack image` writes its archives. */
export function archivesDir(): string {
  return join(imagesDir(), "oci");
}

/** The archive file of an image under `dir`: one file per image and version. */
export function archivePath(dir: string, spec: { readonly name: string; readonly bud: { readonly tag: string } }): string {
  return join(dir, `${spec.name}-${spec.bud.tag.split(":").at(-1)}.oci.tar`);
}
