// The Debian root file system: one mmdebstrap run, the state of the archive named by the dates of
// its Release files (the machine's dated snapshot mirror is not reachable; deb.debian.org is).
import { aptSources, debianRecipe, releaseFileUrls } from "./recipes.ts";
import { run } from "./run.ts";

/** When each suite's Release file was made: a new point release or update changes the key. */
export async function releaseDates(): Promise<string[]> {
  return Promise.all(
    releaseFileUrls().map(async (url) => {
      const response = await fetch(url, { signal: AbortSignal.timeout(60_000) });
      if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
      return `${url} ${releaseDate(await response.text(), url)}`;
    }),
  );
}

/** The Date field of a Release file. */
export function releaseDate(release: string, url: string): string {
  const date = /^Date: (.+)$/m.exec(release)?.[1];
  if (!date) throw new Error(`${url}: no Date field`);
  return new Date(date).toISOString();
}

export function mmdebstrapArgs(tarball: string): string[] {
  return [
    `--variant=${debianRecipe.variant}`,
    `--include=${debianRecipe.packages.join(",")}`,
    ...debianRecipe.dpkgOptions.map((option) => `--dpkgopt=${option}`),
    ...debianRecipe.aptOptions.map((option) => `--aptopt=${option}`),
    debianRecipe.suite,
    tarball,
    ...aptSources(),
  ];
}

export function buildRootTarball(tarball: string): void {
  run("mmdebstrap", mmdebstrapArgs(tarball), { timeoutSeconds: 900 });
}
