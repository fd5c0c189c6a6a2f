// A loopback TCP proxy in front of the API server that injects faults into one replica's
// connections: "reset" closes every connection and refuses new ones at once (an API server that
// restarts, a dropped link); "stall" stops forwarding in both directions and holds new connections
// unanswered (a hung API server, a partition without resets); "half-open" stops forwarding on the
// connections open now, which stay open, while new ones work (a peer gone without a reset, a NAT
// that forgot the connection: only a long-lived connection, a watch, notices). TLS passes through
// untouched: the proxy listens on 127.0.0.1, which the API server's certificate names.
import { readFileSync, writeFileSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";

export type Fault = "none" | "reset" | "stall" | "half-open";

interface Pair {
  readonly client: Socket;
  upstream?: Socket;
}

export class FaultProxy {
  private fault: Fault = "none";
  private readonly pairs = new Set<Pair>();

  private readonly server: Server;
  readonly port: number;

  private constructor(
    server: Server,
    port: number,
  ) {
    this.server = server;
    this.port = port;
  }

  /** Listens on a free loopback port, forwarding to `target`. */
  static async start(target: { host: string; port: number }): Promise<FaultProxy> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const proxy = new FaultProxy(server, (server.address() as { port: number }).port);
    server.on("connection", (client) => proxy.accept(client, target));
    return proxy;
  }

  private accept(client: Socket, target: { host: string; port: number }): void {
    if (this.fault === "reset") return void client.resetAndDestroy();
    const pair: Pair = { client };
    this.pairs.add(pair);
    client.on("error", () => undefined);
    client.on("close", () => {
      pair.upstream?.destroy();
      this.pairs.delete(pair);
    });
    if (this.fault === "stall") client.pause();
    else this.connect(pair, target);
    // Held connections get their upstream when the stall ends.
    client.once("resume-proxy", () => this.connect(pair, target));
  }

  private connect(pair: Pair, target: { host: string; port: number }): void {
    if (pair.upstream) return;
    const upstream = createConnection(target);
    pair.upstream = upstream;
    upstream.on("error", () => pair.client.destroy());
    upstream.on("close", () => pair.client.destroy());
    pair.client.pipe(upstream);
    upstream.pipe(pair.client);
    pair.client.resume();
  }

  /** Sets the fault for every connection, open and new. */
  set(fault: Fault): void {
    this.fault = fault;
    for (const pair of this.pairs) {
      if (fault === "reset") pair.client.resetAndDestroy();
      if (fault === "stall" || fault === "half-open") {
        pair.client.pause();
        pair.upstream?.pause();
      }
      if (fault === "none") {
        pair.upstream?.resume();
        if (pair.upstream) pair.client.resume();
        else pair.client.emit("resume-proxy");
      }
    }
  }

  async close(): Promise<void> {
    for (const pair of this.pairs) pair.client.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** A copy of `kubeconfig` whose `server` (https://127.0.0.1:port) is reached through `proxy`. */
export function kubeconfigThrough(kubeconfig: string, server: string, proxy: FaultProxy, file: string): string {
  const text = readFileSync(kubeconfig, "utf8");
  if (!text.includes(server)) throw new Error(`${kubeconfig} does not name ${server}`);
  writeFileSync(file, text.replaceAll(server, `https://127.0.0.1:${proxy.port}`));
  return file;
}
