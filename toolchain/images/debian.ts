// The Debian root file system: one mmdebstrap run, the state of the archive named by the dates of
// its Release files (the machine's dated snapshot mirror is not reachable; deb.debian.org is).
import { aptSources, debianRecipe, releaseFileUrls } from "./recipes.ts";
import { run } from "./run.ts";

/** When each suite's Release file last changed: a new point release or update changes the key. */
export async function releaseDates(): Promise<string[]> {
  return Promise.all(
    releaseFileUrls().map(async (url) => {
      const response = await fetch(url, { method: "HEAD", signal: AbortSignal.timeout(30_000) });
      const modified = response.headers.get("last-modified");
      if (!response.ok || !modified) throw new Error(`${url}: HTTP ${response.status}${modified ? "" : ", no Last-Modified"}`);
      return `${url} ${new Date(modified).toISOString()}`;
    }),
  );
}

export function mmdebstrapArgs(tarball: string): string[] {
  return [
    `--variant=${debianRecipe.variant}`,
    `--include=${debianRecipe.packages.join(",")}`,
    ...debianRecipe.dpkgOptions.map((option) => `--dpkgopt=${option}`),
    debianRecipe.suite,
    tarball,
    ...aptSources(),
  ];
}

export function buildRootTarball(tarball: string): void {
  run("mmdebstrap", mmdebstrapArgs(tarball), { timeoutSeconds: 900 });
}
