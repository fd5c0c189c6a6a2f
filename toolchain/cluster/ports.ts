import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { randomInt } from "node:crypto";

// Below the kernel's ephemeral range, so no socket that binds port 0 (an outgoing connection, a
// plugin's gRPC server) is ever handed one of these while its listener is down: a restarted API
// server once found its port taken that way.
const lowestPort = 10_000;

function ephemeralRangeStart(): number {
  try {
    const [low] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    return low !== undefined && low > lowestPort + 1_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function listensOn(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * Loopback ports free now, outside the ephemeral range. Each is released before use, so another
 * process that picks ports the same way could take it first; the cluster start retries on a bind
 * failure for that reason.
 */
export async function freeLoopbackPorts(count: number): Promise<number[]> {
  const end = ephemeralRangeStart();
  const ports = new Set<number>();
  for (let tries = 0; ports.size < count; tries++) {
    if (tries > 1_000) throw new Error(`no free loopback port between ${lowestPort} and ${end}`);
    const port = randomInt(lowestPort, end);
    if (!ports.has(port) && (await listensOn(port))) ports.add(port);
  }
  return [...ports];
}
