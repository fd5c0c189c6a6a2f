// Which images `appstack image` builds from which Dockerfile, under which names. Pure.
import { join } from "node:path";
import { repoRoot, toolchainDir } from "../tools.ts";
import type { BaseImages, GoCaches } from "./bases.ts";
import type { BudRequest } from "./buildah.ts";

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

export function imageSpecs(bases: BaseImages, caches: GoCaches, version: string): ImageSpec[] {
  const workload = (name: string): ImageSpec => ({
    name,
    bud: {
      dockerfile: join(toolchainDir, "images", name, "Dockerfile"),
      context: join(toolchainDir, "images", name),
      tag: `localhost/appstack/${name}:${version}`,
      buildArgs: { DEBIAN_IMAGE: bases.debian },
    },
    archiveName: `localhost/appstack/${name}:${version}`,
  });
  return [
    {
      name: "operator",
      bud: {
        dockerfile: join(repoRoot, "Dockerfile"),
        context: repoRoot,
        tag: `localhost/appstack:${version}`,
        buildArgs: { GO_IMAGE: bases.golang, NODE_IMAGE: bases.node, DEBIAN_IMAGE: bases.debian, APPSTACK_VERSION: version },
        sameVolumes: [{ path: caches.modCache }, { path: caches.buildCache }, { path: caBundle, readOnly: true }],
      },
      archiveName: `docker.io/library/appstack:${version}`,
    },
    workload("http"),
    workload("memcached"),
  ];
}

/** The archive file of an image under `dir`: one file per image and version. */
export function archivePath(dir: string, spec: ImageSpec): string {
  return join(dir, `${spec.name}-${spec.bud.tag.split(":").at(-1)}.oci.tar`);
}
