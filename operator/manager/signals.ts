// SIGINT and SIGTERM: the first stops gracefully, a second one stops at once.
//
// The listeners stay registered (process.on, not once): while a Pulumi engine runs, execa's
// signal-exit also listens, and it re-raises a signal that no other listener handles, which
// killed the process in the middle of its graceful shutdown.
//
// One Ctrl-C can arrive more than once: the terminal sends SIGINT to the whole foreground group,
// and the wrappers in it forward the one they received to their child as well: npm (whose child
// is this process where the script's shell execs the command, as bash does; dash does not, and
// then the copy goes to the shell), and tsx unless its child reports having the signal. A copy
// comes within milliseconds, even on a loaded machine, or not at all when the kernel merges it
// with the terminal's while that is still pending (more often the busier the machine), so copies
// are told by time, not counted: those within `sameSignalMs` of the first are that one
// keypress; a person's second Ctrl-C comes later.
import type { Logger } from "../base/log.ts";

export const sameSignalMs = 500;

export interface SignalSource {
  on(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
}

export function onStopSignals(stop: (signal: string) => void, log: Logger, source: SignalSource = process, now: () => number = () => performance.now(), exit: (code: number) => void = (code) => process.exit(code)): void {
  let firstAt: number | undefined;
  const handle = (signal: NodeJS.Signals) => {
    if (firstAt === undefined) {
      firstAt = now();
      stop(signal);
    } else if (now() - firstAt >= sameSignalMs) {
      log.warn("second signal: stopping at once", { signal });
      exit(1);
    }
  };
  source.on("SIGINT", handle);
  source.on("SIGTERM", handle);
}
