// The operator's own process-level uncaughtException and unhandledRejection listeners. A kind's
// program runs inline, in this process: an error escaping it after its run ended (a timer that
// throws later) reaches no run's listener (sdk-patches/0005 has each run count only its own), and
// Node.js's default would end the operator; it restarts, reconciles the same object and ends again,
// for every object. An error raised under a run's async store is a kind's program's: logged, and the
// operator keeps running. One raised under none is the operator's own code's: it ends the process as
// Node.js would, so a real bug still crashes and restarts the operator, run or no run.
import sdkState from "@pulumi/pulumi/runtime/state.js";
import type { Logger } from "../base/log.ts";

/** What this module reads of the SDK's per-run store (runtime/state.js LocalStore; internal, so not in its types). */
interface RunStore {
  readonly settings?: { readonly options?: { readonly project?: string; readonly stack?: string } };
}

const { getLocalStore } = sdkState as unknown as { getLocalStore: () => RunStore | undefined };

/** Installs the listeners once, at startup, before any run: they are the first `process` hears. */
export function handleProgramErrors(log: Logger): void {
  const onError = (error: unknown, origin: string) => {
    // Node.js calls these listeners in the async context of the throw or rejection.
    const store = getLocalStore();
    const fields = { origin, error: error instanceof Error ? error.message : String(error), trace: error instanceof Error ? error.stack : undefined };
    if (store === undefined) {
      log.error("the operator hit an error it does not handle: exiting", { ...fields, fatal: true });
      process.exit(1);
    }
    // While its run lasts, the SDK's listener also fails that run with it (patch 0005); after, this line is all that says it.
    const options = store.settings?.options;
    log.error("an error escaped a kind's program; the operator keeps running", { ...fields, project: options?.project, stack: options?.stack });
  };
  process.on("uncaughtException", (error, origin) => onError(error, origin));
  process.on("unhandledRejection", (reason) => onError(reason, "unhandledRejection"));
}
