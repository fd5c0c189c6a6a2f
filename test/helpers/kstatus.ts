// How kstatus reads an object: sigs.k8s.io/cli-utils/pkg/kstatus, the health library of Flux,
// kapply and Config Sync, at its pinned version (toolchain/kstatus). Tests give it objects as the
// API server returned them.
import { execFileSync } from "node:child_process";
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
