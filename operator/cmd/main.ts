// The operator process: wiring only (config, logger, service, signals), as kubebuilder's cmd/main.go.
import { loadConfig, operatorFlagsUsage, operatorOptions } from "../manager/config.ts";
import { createLogger } from "../manager/log.ts";
import { startService } from "../manager/service.ts";
import { onStopSignals } from "../manager/signals.ts";
import { parseFlags } from "./flags.ts";

export const operatorUsage = `usage: appstack operator [flags]\n${operatorFlagsUsage}`;

export async function runOperator(argv: readonly string[]): Promise<void> {
  const config = loadConfig(parseFlags(argv, operatorOptions, operatorUsage));
  const log = createLogger({ level: config.logLevel, format: config.logFormat });
  const service = await startService(config, log);
  await new Promise<void>((resolve) => {
    onStopSignals((signal) => {
      log.info("shutting down: finishing running operations", { signal });
      service.stop().then(resolve, resolve);
    }, log);
  });
  log.info("stopped");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runOperator(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
