// The requests the API server served, by its own count (kube-apiserver's apiserver_request_total
// on its /metrics, read with the cluster's admin credentials): the load on it while a reconciler
// works or idles, whoever sent them (the reconciler, the control plane, the bench's own polling).
import { request as httpsGet, type RequestOptions } from "node:https";
import { loadKubeConfig, responseOf } from "../../toolchain/cluster/readiness.ts";
import { counterTotal } from "../helpers/operator.ts";

/** Requests a second over a stretch of time; writes are those that change an object. */
export interface RequestRate {
  readonly perSecond: number;
  readonly writesPerSecond: number;
  readonly seconds: number;
}

const counter = "apiserver_request_total";
const writeVerbs = ["POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"];

async function metricsOf(kubeconfig: string): Promise<string> {
  const kc = loadKubeConfig(kubeconfig);
  const options: RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const { status, body } = await responseOf(httpsGet, `${kc.getCurrentCluster()?.server}/metrics`, options);
  if (status !== 200) throw new Error(`kube-apiserver /metrics answered HTTP ${status}`);
  return body;
}

async function requestCounts(kubeconfig: string): Promise<{ total: number; writes: number }> {
  const body = await metricsOf(kubeconfig);
  const writes = body.split("\n").filter((line) => line.startsWith(`${counter}{`) && writeVerbs.some((verb) => line.includes(`verb="${verb}"`)));
  return { total: counterTotal(body, counter), writes: counterTotal(writes.join("\n"), counter) };
}

/** Starts counting now; the function it returns gives the rate since. */
export async function countRequests(kubeconfig: string): Promise<() => Promise<RequestRate>> {
  const before = await requestCounts(kubeconfig);
  const started = Date.now();
  return async () => {
    const after = await requestCounts(kubeconfig);
    const seconds = (Date.now() - started) / 1000;
    return { perSecond: (after.total - before.total) / seconds, writesPerSecond: (after.writes - before.writes) / seconds, seconds };
  };
}

/** The API server's requests a second in each stretch, and per 1,000 of the `n` objects. */
export function requestTable(stretches: readonly { readonly title: string; readonly rate: RequestRate }[], n: number): string {
  const perThousand = (rate: number) => ((rate / n) * 1000).toFixed(1);
  return [
    `| kube-apiserver requests (its apiserver_request_total), ${n} objects | seconds | requests/s (of them writes/s) | the same per 1,000 objects | requests per object |`,
    "|---|---|---|---|---|",
    ...stretches.map(({ title, rate }) => `| ${title} | ${rate.seconds.toFixed(0)} | ${rate.perSecond.toFixed(1)} (${rate.writesPerSecond.toFixed(1)}) | ${perThousand(rate.perSecond)} (${perThousand(rate.writesPerSecond)}) | ${((rate.perSecond * rate.seconds) / n).toFixed(1)} |`),
  ].join("\n");
}

/** The requests by verb and resource (`LIST events`, `APPLY deployments`), from the API server's own count. */
async function requestsByKind(kubeconfig: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const line of (await metricsOf(kubeconfig)).split("\n")) {
    if (!line.startsWith(`${counter}{`)) continue;
    const label = (name: string) => new RegExp(`[{,]${name}="([^"]*)"`).exec(line)?.[1] ?? "";
    const key = `${label("verb")} ${label("resource")}${label("subresource") ? `/${label("subresource")}` : ""}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(line.split(" ").at(-1)));
  }
  return counts;
}

/** Starts counting requests by kind now; the function it returns gives those since, most first. */
export async function countRequestsByKind(kubeconfig: string): Promise<() => Promise<[string, number][]>> {
  const before = await requestsByKind(kubeconfig);
  return async () => [...(await requestsByKind(kubeconfig))].map(([key, count]): [string, number] => [key, count - (before.get(key) ?? 0)]).filter(([, count]) => count > 0).sort((a, b) => b[1] - a[1]);
}

/** The most frequent kinds of request in a stretch, per object. */
export function requestKindTable(title: string, kinds: readonly [string, number][], n: number, top = 10): string {
  return [
    `| ${title}: kube-apiserver requests by verb and resource | per object |`,
    "|---|---|",
    ...kinds.slice(0, top).map(([kind, count]) => `| ${kind} | ${(count / n).toFixed(2)} |`),
  ].join("\n");
}
