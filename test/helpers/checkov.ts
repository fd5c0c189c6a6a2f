// checkov (Bridgecrew's infrastructure-as-code scanner, from PyPI), as a platform team runs it on
// Kubernetes manifests: pinned, installed once into a Python virtual environment under the
// toolchain's cache folder (keyed by its version and Python's), and run offline (no policy
// download, no update check).
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { cacheRoot } from "../../toolchain/tools.ts";

/** The checkov release the allowlist was written against; a new one may add checks. */
export const checkovVersion = "3.3.30";

/** Why checkov cannot be installed here (no python3 with venv), or undefined when it can. */
export function checkovUnavailable(): string | undefined {
  const probe = spawnSync("python3", ["-c", "import venv, ensurepip"], { encoding: "utf8" });
  if (probe.error) return `no python3 on PATH (${probe.error.message}): Debian's python3 and python3-venv`;
  if (probe.status !== 0) return `python3 has no venv with pip (Debian's python3-venv): ${probe.stderr.trim()}`;
  return undefined;
}

function pythonVersion(): string {
  return execFileSync("python3", ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], { encoding: "utf8" }).trim();
}

/**
 * The folder of the virtual environment with checkov installed, made on first use (a minute or
 * more: checkov and its dependencies from PyPI). It is made beside its final name and renamed into
 * place once complete, so that a run killed halfway leaves no environment that looks whole. Run it
 * through its own interpreter (`bin/python bin/checkov`): a moved environment's scripts name the
 * folder they were installed in, its interpreter finds its packages wherever it is.
 */
export function checkovEnvironment(): string {
  const folder = join(cacheRoot(), `checkov-${checkovVersion}-py${pythonVersion()}`);
  if (existsSync(join(folder, "bin", "checkov"))) return folder;
  mkdirSync(cacheRoot(), { recursive: true });
  const partial = `${folder}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  try {
    execFileSync("python3", ["-m", "venv", partial], { stdio: ["ignore", "ignore", "inherit"] });
    execFileSync(join(partial, "bin", "python"), ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input", `checkov==${checkovVersion}`], { stdio: ["ignore", "ignore", "inherit"] });
    // Another run may have finished first: its environment is as good as this one.
    if (!existsSync(folder)) renameSync(partial, folder);
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  return folder;
}

/** One failed check, as checkov reports it. */
export interface CheckovFailure {
  readonly checkId: string;
  readonly checkName: string;
  /** kind.namespace.name, as checkov names a resource. */
  readonly resource: string;
}

interface Report {
  readonly results: { readonly failed_checks: readonly { check_id: string; check_name: string; resource: string }[] };
  readonly summary: { readonly passed: number; readonly failed: number };
}

/** checkov's Kubernetes checks on every YAML file in `folder`: what failed, and how many passed. */
export function runCheckov(environment: string, folder: string): { failed: CheckovFailure[]; passed: number } {
  const result = spawnSync(join(environment, "bin", "python"), [join(environment, "bin", "checkov"), "--directory", folder, "--framework", "kubernetes", "--output", "json", "--quiet", "--compact", "--skip-download"], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, CKV_SKIP_PACKAGE_UPDATE_CHECK: "true", BC_SKIP_MAPPING: "TRUE" },
  });
  // Exit 1: some check failed, which the caller judges; anything else is checkov's own failure.
  if (result.status !== 0 && result.status !== 1) throw new Error(`checkov exited ${result.status}: ${result.stderr}`);
  const parsed = JSON.parse(result.stdout) as Report | Report[];
  const reports = Array.isArray(parsed) ? parsed : [parsed];
  return {
    failed: reports.flatMap((report) => report.results.failed_checks.map((check) => ({ checkId: check.check_id, checkName: check.check_name, resource: check.resource }))),
    passed: reports.reduce((sum, report) => sum + report.summary.passed, 0),
  };
}
