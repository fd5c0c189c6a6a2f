// A stand-in API server for unit tests of watches: it answers each request as told, then says
// nothing more, so a test decides exactly what a watch sees. Records what it was asked.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";

/** An API server that answers each request as `answer` says, then says nothing more; what it was asked. */
export async function silentServer(answer: (res: ServerResponse, url: URL) => void) {
  const requests: URL[] = [];
  const closed: Promise<void>[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    requests.push(url);
    closed.push(new Promise((resolve) => req.socket.once("close", () => resolve())));
    answer(res, url);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: "silent", server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
    users: [{ name: "nobody" }],
    contexts: [{ name: "silent", cluster: "silent", user: "nobody" }],
    currentContext: "silent",
  });
  const close = () => {
    server.closeAllConnections();
    server.close();
  };
  return { config, requests, closed, close };
}
