// What a test of pods on a real node asks of them from the host besides HTTP (http.ts): memcached's
// `stats`, and a pod's memory from its cgroup.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";

/** memcached's `stats` over a raw TCP socket: the lines up to END. */
export function memcachedStats(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, timeout: 2_000 });
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.write("stats\r\n"));
    socket.on("data", (chunk: string) => {
      answer += chunk;
      if (answer.includes("END\r\n")) {
        socket.end("quit\r\n");
        resolve(answer);
      }
    });
    socket.on("timeout", () => socket.destroy(new Error("timeout")));
    socket.on("error", reject);
    socket.on("close", () => reject(new Error(`closed before END: ${answer}`)));
  });
}

/** The operator pod's memory cgroup (cgroup v1 on this machine): usage and peak, in MiB. */
export function podMemory(pod: V1Pod, cgroupRoot: string): { usage: number; peak: number } | undefined {
  const uid = pod.metadata?.uid?.replaceAll("-", "_") ?? "";
  const search = (dir: string, depth: number): string | undefined => {
    if (depth > 6 || !existsSync(dir)) return undefined;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const path = join(dir, entry.name);
      if (entry.name.includes(uid) || entry.name.includes(pod.metadata?.uid ?? "-")) return path;
      const found = search(path, depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  const dir = search(join("/sys/fs/cgroup/memory", cgroupRoot), 0);
  if (!dir) return undefined;
  const mib = (file: string) => Number(readFileSync(join(dir, file), "utf8")) / 1048576;
  return { usage: mib("memory.usage_in_bytes"), peak: mib("memory.max_usage_in_bytes") };
}
