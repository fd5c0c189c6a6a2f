// /healthz and /readyz in plain HTTP, for the kubelet's probes, as controller-runtime's manager
// serves them; /metrics beside them only on a loopback address (config.ts), else on a server of
// its own (metrics-server.ts).
import { createServer, type Server } from "node:http";
import type { Registry } from "prom-client";
import { serveMetrics } from "./metrics-server.ts";

export interface Probes {
  /** The process is alive and its event loop turns; served from before the start-up steps that wait on the network. */
  readonly healthy: () => boolean;
  /** Start-up is done, caches are synced and leadership is settled (leading, or following a live leader). */
  readonly ready: () => boolean;
  /**
   * What works but should not be left so (a state database whose certificate is not verified):
   * said under /readyz's answer, one `warning:` line each, without changing its status.
   */
  readonly warnings?: readonly string[];
}

/** A probe's body: its verdict, and for /readyz the warnings under it. */
function bodyOf(ok: boolean, warnings: readonly string[]): string {
  return [ok ? "ok" : "not ready", ...warnings.map((warning) => `warning: ${warning}`)].join("\n") + "\n";
}

/** `registry`: /metrics is served here too (a loopback address only); without it, 404. */
export function startHealthServer(port: number, host: string, probes: Probes, registry?: Registry): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const probe = path === "/healthz" ? probes.healthy : path === "/readyz" ? probes.ready : undefined;
    if (probe) {
      const ok = probe();
      res.writeHead(ok ? 200 : 503, { "content-type": "text/plain" }).end(bodyOf(ok, path === "/readyz" ? (probes.warnings ?? []) : []));
      return;
    }
    if (path === "/metrics" && registry) return serveMetrics(registry, res);
    res.writeHead(404).end();
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}
