// `appstack image`: the base images, the operator image from the repository's Dockerfile and the
// workload images, built with buildah (no daemon, no registry), each written as an OCI archive
// that `ctr images import` loads.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { buildBases, hostGoCaches, seconds } from "./bases.ts";
import { budArgs, buildah, imageId, imageSize, imagesDir } from "./buildah.ts";
import { archivePath, archivesDir, imageSpecs, type ImageSpec } from "./images.ts";
import { projectVersion } from "./recipes.ts";
import { patchedModulesDir } from "../tools.ts";

type Log = (line: string) => void;

export interface BuiltImage {
  readonly name: string;
  readonly tag: string;
  readonly archive: string;
  readonly archiveName: string;
}

/** Writes the OCI archive unless the one there already holds this image (its ID beside it). */
function writeArchive(spec: ImageSpec, archive: string, log: Log): void {
  const id = imageId(spec.bud.tag);
  if (!id) throw new Error(`${spec.bud.tag} is not in the image storage after its build`);
  const idFile = `${archive}.image-id`;
  if (existsSync(archive) && existsSync(idFile) && readFileSync(idFile, "utf8") === id) return;
  const partial = `${archive}.partial-${process.pid}`;
  try {
    buildah(["push", "--quiet", spec.bud.tag, `oci-archive:${partial}:${spec.archiveName}`], { timeoutSeconds: 900 });
    renameSync(partial, archive);
  } finally {
    rmSync(partial, { force: true });
  }
  writeFileSync(idFile, id);
  log(`  ${spec.name}: wrote ${archive}`);
}

export interface BuildOptions {
  /** The images' tag and the operator's APPSTACK_VERSION; the project's version by default. */
  readonly version?: string;
  /** Only these images (operator, http, memcached); all by default. */
  readonly only?: readonly string[];
}

export async function buildImages(log: Log = (line) => console.error(line), options: BuildOptions = {}): Promise<BuiltImage[]> {
  const started = Date.now();
  log(`image: storage ${imagesDir()}`);
  const caches = hostGoCaches();
  const bases = await buildBases(caches, log);
  const archives = archivesDir();
  mkdirSync(archives, { recursive: true });
  const built: BuiltImage[] = [];
  const specs = imageSpecs(bases, caches, options.version ?? projectVersion(), patchedModulesDir()).filter((spec) => !options.only || options.only.includes(spec.name));
  for (const spec of specs) {
    const imageStarted = Date.now();
    log(`  ${spec.name}: buildah bud ${spec.bud.dockerfile}...`);
    buildah(budArgs(spec.bud), { timeoutSeconds: 3600, showOutput: true });
    const archive = archivePath(archives, spec);
    writeArchive(spec, archive, log);
    const megabytes = (statSync(archive).size / 1e6).toFixed(0);
    log(`  ${spec.name}: ${spec.bud.tag}, ${imageSize(spec.bud.tag)} unpacked, archive ${megabytes} MB, ${seconds(imageStarted)} s`);
    built.push({ name: spec.name, tag: spec.bud.tag, archive, archiveName: spec.archiveName });
  }
  log(`image: ready in ${seconds(started)} s`);
  return built;
}
