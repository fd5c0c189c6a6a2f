// The one HTTP GET of the tests: an operator's health endpoints on loopback, a pod's /metrics, an
// App's Service from the host. A deadline on the socket (responseOf's 2 s without data), as on
// every external call; the status and body, whatever the status.
import { request } from "node:http";
import { responseOf } from "../../toolchain/cluster/readiness.ts";

export const httpGet = (url: string): Promise<{ status: number; body: string }> => responseOf(request, url, {});
