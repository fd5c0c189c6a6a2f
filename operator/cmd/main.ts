// The operator process: wiring only (config, logger, service, signals), as kubebuilder's cmd/main.go.
import "./preload.ts";
import { loadConfig, operatorFlagsUsage, operatorOptions } from "../manager/config.ts";
import { createLogger } from "../base/log.ts";
import { startService } from "../manager/service.ts";
import { handleProgramErrors } from "../pulumi/program-errors.ts";
import { engineBinaries } from "../../toolchain/tools.ts";
import { onStopSignals } from "../manager/signals.ts";
import { timedOut, withinDeadline } from "../base/deadline.ts";
import { parseFlags } from "./flags.ts";
import { loadKindsOption, logKindFolders } from "./kinds-option.ts";
import { setFlagsFromString } from "node:v8";

export const operatorUsage = `usage: appstack operator [flags]\n${operatorFlagsUsage}`;

/** Runs the operator until a stop signal, then ends the process. */
export async function runOperator(argv: readonly string[]): Promise<void> {
  // V8 otherwise lets the heap grow to several times what is live before it collects: 100 new Apps
  // took the operator to 470 MiB RSS with 100 MiB live. Favouring size holds it near 220 MiB; it
  // costs this process CPU (13 to 15 s instead of 8 for those 100 Apps) and the round a few percent
  // of its time, since the engines, not this process, set the pace. V8 reads the flag as it runs
  // (heap growth, compiler choices), so setting it here works; NODE_OPTIONS does not accept it.
  setFlagsFromString("--optimize-for-size");
  const config = loadConfig(parseFlags(argv, operatorOptions, operatorUsage));
  const log = createLogger({ level: config.logLevel, format: config.logFormat });
  handleProgramErrors(log);
  logKindFolders(log);
  const service = await startService(config, engineBinaries(), log);
  const stopped = await new Promise<boolean>((resolve) => {
    onStopSignals((signal) => {
      log.info("shutting down: finishing running operations", { signal });
      // The operations have shutdownGraceMs; the rest (status writes, the lease, the server) a
      // bounded while more, so that the pod ends before the kubelet's SIGKILL, not by it.
      void withinDeadline(service.stop(), config.shutdownGraceMs + stopAfterGraceMs).then((result) => resolve(result !== timedOut), () => resolve(false));
    }, log);
  });
  // What else is still open (sockets, timers) says what would have kept the process alive.
  if (stopped) log.info("stopped", { stillOpen: process.getActiveResourcesInfo() });
  else log.warn("shutdown did not finish in time; exiting anyway", { graceMs: config.shutdownGraceMs + stopAfterGraceMs });
  // Exits once stopped, whatever handle (a socket, a library's timer) would keep the event loop
  // alive: a pod must end on its SIGTERM, not on the kubelet's SIGKILL a grace period later.
  process.exit(stopped ? 0 : 1);
}

/** What the stop may take past the operations' grace: stopping watches, handing the lease over, closing the server. */
const stopAfterGraceMs = 15_000;

if (import.meta.url === `file://${process.argv[1]}`) {
  // The kinds folder before anything reads the kinds (started as `appstack operator`, cli.ts has loaded it).
  loadKindsOption("operator", process.argv.slice(2)).then(() => runOperator(process.argv.slice(2))).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
