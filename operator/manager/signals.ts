// SIGINT and SIGTERM: the first stops gracefully, a second one stops at once.
//
// The listeners stay registered (process.on, not once): while a Pulumi engine runs, execa's
// signal-exit also listens, and it re-raises a signal that no other listener handles, which
// killed the process in the middle of its graceful shutdown.
import type { Logger } from "./log.ts";

export function onStopSignals(stop: (signal: string) => void, log: Logger): void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn("second signal: stopping at once", { signal });
      process.exit(1);
    }
    stopping = true;
    stop(signal);
  };
  process.on("SIGINT", handle);
  process.on("SIGTERM", handle);
}
