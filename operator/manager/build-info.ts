// Which build of the operator runs: the version the image was built as (APPSTACK_VERSION, a build
// argument of the Dockerfile that `appstack image` sets to the image's tag), else the package's
// version (a run from the repository). Reported as appstack_build_info, so that an upgrade can be
// seen to have taken.
import { readFileSync } from "node:fs";
import { join } from "node:path";

const packageJson = join(import.meta.dirname, "..", "..", "package.json");

export function buildVersion(env: NodeJS.ProcessEnv = process.env): string {
  const fromImage = env["APPSTACK_VERSION"]?.trim();
  if (fromImage) return fromImage;
  return (JSON.parse(readFileSync(packageJson, "utf8")) as { version: string }).version;
}
