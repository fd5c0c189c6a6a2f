// How kstatus reads an object: sigs.k8s.io/cli-utils/pkg/kstatus, the health library of Flux,
// kapply and Config Sync, at its pinned version (toolchain/kstatus). Tests give it objects as the
// API server returned them.
import { execFileSync, spawnSync } from "node:child_process";
import { toolPath } from "../../toolchain/tools.ts";

export type KstatusStatus = "InProgress" | "Current" | "Failed" | "Terminating" | "NotFound" | "Unknown";

export interface KstatusReading {
  readonly status: KstatusStatus;
  readonly message: string;
}

export function kstatus(object: object): KstatusReading {
  const output = execFileSync(toolPath("kstatus"), { input: JSON.stringify(object), encoding: "utf8", timeout: 30_000 });
  return JSON.parse(output) as KstatusReading;
}

/** Many objects in one process (the binary reads a stream of them and answers a line each), in order. */
export function kstatusAll(objects: readonly object[]): KstatusReading[] {
  const input = objects.map((object) => JSON.stringify(object)).join("\n");
  const output = execFileSync(toolPath("kstatus"), { input, encoding: "utf8", timeout: 30_000 });
  const readings = output.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as KstatusReading);
  if (readings.length !== objects.length) throw new Error(`kstatus answered ${readings.length} of ${objects.length} objects`);
  return readings;
}

/** The error status.Compute returns for an object, as the binary says it before exiting non-zero; undefined if it reads the object. */
export function kstatusError(object: object): string | undefined {
  const run = spawnSync(toolPath("kstatus"), { input: JSON.stringify(object), encoding: "utf8", timeout: 30_000 });
  if (run.error) throw run.error;
  if (run.status === 0) return undefined;
  return run.stderr.trim().replace(/^kstatus: /, "");
}
