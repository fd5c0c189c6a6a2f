// The benchmark's settings, from the environment (see docs/development/benchmark.md).
import { fakeNodesFor } from "../../toolchain/cluster/readiness.ts";

export const sizes = (process.env["BENCH_SIZES"] ?? "10,50,100").split(",").map(Number);
export const idleSeconds = Number(process.env["BENCH_IDLE_SECONDS"] ?? "60");
export const previewCount = Number(process.env["BENCH_PREVIEW_APPS"] ?? "10");
// Short, so that the idle period holds several resyncs of every object.
export const resyncSeconds = Number(process.env["BENCH_RESYNC_SECONDS"] ?? "10");
export const singleRuns = 5;
// The effect of the operator's concurrency: the first size again, on an operator of each setting.
export const sweep = (process.env["BENCH_CONCURRENCY_SWEEP"] ?? "1,2,3,4").split(",").filter(Boolean).map(Number);
export const sweepSize = Number(process.env["BENCH_SWEEP_APPS"] ?? "20");

/** kwok nodes for `pods` pods at once, with a quarter more room. */
export const benchNodes = fakeNodesFor;
