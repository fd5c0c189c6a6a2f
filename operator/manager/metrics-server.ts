// /metrics on a server of its own (APPSTACK_METRICS_ADDR): HTTPS, each request authenticated and
// authorized through the API server (metrics-auth.ts), as kubebuilder's scaffolds serve it; plain
// HTTP only where config.ts allows it, on a loopback address.
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Registry } from "prom-client";
import type { Logger } from "../base/log.ts";
import type { MetricsServing } from "./config.ts";
import type { MetricsAuthorizer } from "./metrics-auth.ts";
import { certificateRereadMs, readCertificateDir, selfSignedCertificate, watchCertificateDir } from "./serving-cert.ts";

/** The registry's text, or a 500 saying why not. */
export function serveMetrics(registry: Registry, res: ServerResponse): void {
  registry.metrics().then(
    (text) => res.writeHead(200, { "content-type": registry.contentType }).end(text),
    (error: unknown) => res.writeHead(500).end(String(error)),
  );
}

function listen(server: Server, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}

/** `authorizer`: required when `serving.secure`; `rereadMs`: how often a certificate folder is read again. Resolves once it listens. */
export async function startMetricsServer(serving: MetricsServing, registry: Registry, log: Logger, authorizer?: MetricsAuthorizer, rereadMs = certificateRereadMs): Promise<Server> {
  const handle = (req: IncomingMessage, res: ServerResponse, authorize: boolean) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (path !== "/metrics") return void res.writeHead(404).end();
    if (!authorize) return serveMetrics(registry, res);
    void authorizer!.check(req.headers.authorization, req.method ?? "GET", path).then((verdict) => {
      if (verdict.status === 200) return serveMetrics(registry, res);
      if (verdict.status === 500) log.warn("could not review a /metrics request", { reason: verdict.message });
      else log.debug("refused a /metrics request", { status: verdict.status, reason: verdict.message });
      res.writeHead(verdict.status, { "content-type": "text/plain" }).end(`${verdict.message}\n`);
    });
  };
  if (!serving.secure) return listen(createHttpServer((req, res) => handle(req, res, false)), serving.port, serving.host);
  if (!authorizer) throw new Error("HTTPS metrics need the API server's reviews");
  const pair = serving.certDir ? readCertificateDir(serving.certDir) : selfSignedCertificate();
  const server = createHttpsServer({ ...pair, minVersion: "TLSv1.2" }, (req, res) => handle(req, res, true));
  if (serving.certDir) {
    const dir = serving.certDir;
    const stop = watchCertificateDir(dir, pair, (next) => {
      server.setSecureContext({ ...next, minVersion: "TLSv1.2" });
      log.info("serving the metrics certificate read again", { dir });
    }, (error) => log.warn("could not read the metrics certificate again; serving the last one", { dir, error: String(error) }), rereadMs);
    server.once("close", stop);
  }
  return listen(server, serving.port, serving.host);
}
