// Kubernetes API connections kept open between requests. client-node's KubeConfig builds a new
// agent for every request (applySecurityAuthentication -> createAgent), so every API call opened a
// TCP connection and made a TLS handshake: a tenth of the operator's CPU and 8% of the API server's
// in their profiles. The agent it builds is set on the request context before the middleware
// runs, so a middleware can swap it for a long-lived keep-alive agent with the same TLS options.
//
// The TLS options are read from client-node's agent on every request, as client-node read them
// (CA, client certificate and key, from the kubeconfig or from files it reads again each time):
// when they change (a rotated client certificate or CA), the pool starts a new agent, and the old
// one's connections close when they have been idle for `idleMs`. Bearer tokens are headers set per
// request (a token file is read again by client-node every 60 s), not part of a connection.
// Agents of any other kind (a proxy's) are left as client-node made them: one per request.
//
// The bound on connections is kept here, not by the agent's `maxSockets`: a request that waits in
// the agent for a socket gets one handed over before the previous response has closed, and
// node-fetch 2 (client-node's HTTP library) then takes that response, when chunked, for cut short
// ("Premature close", node-fetch issue 1767). So at most `maxSockets` exchanges, each with its
// whole body read, are under way at once, and the rest wait here, within their own deadline.
import { createHash } from "node:crypto";
import http from "node:http";
import https from "node:https";
import { WriteFenced } from "./write-fence.ts";
import { createConfiguration, ResponseContext, SelfDecodingBody, wrapHttpLibrary, type HttpLibrary, type RequestContext } from "@kubernetes/client-node";

export interface PoolLimits {
  /** Requests under way at once, so connections open at once; a request beyond them waits, within its own deadline. */
  readonly maxSockets: number;
  /**
   * How long a connection may sit unused before it is closed, so that one the API server (or
   * something between) dropped without a word is not handed out again and again: a request on
   * such a connection waits for its deadline. Node's own global agent keeps idle connections 5 s;
   * the API server closes them after 90 s.
   */
  readonly idleMs: number;
}

export const defaultPoolLimits: PoolLimits = { maxSockets: 32, idleMs: 5_000 };

/** What client-node copies from the kubeconfig into its agent (KubeConfig.applySecurityAuthentication). */
const tlsOptionNames = ["ca", "cert", "key", "pfx", "passphrase", "rejectUnauthorized", "servername"] as const;
type TlsOptions = Pick<https.AgentOptions, (typeof tlsOptionNames)[number]>;

/** client-node's own HTTP library (node-fetch), the one a configuration gets unless told otherwise. */
const fetchLibrary = createConfiguration().httpApi;

export class ConnectionPool {
  private readonly limits: PoolLimits;
  private current: { readonly fingerprint: string; readonly agent: http.Agent } | undefined;
  private underWay = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(limits: PoolLimits = defaultPoolLimits) {
    this.limits = limits;
  }

  /** client-node's HTTP library on this pool's connections: for `createConfiguration({ httpApi })`. */
  httpLibrary(): HttpLibrary {
    return wrapHttpLibrary({ send: (request) => this.send(request) });
  }

  private async send(request: RequestContext): Promise<ResponseContext> {
    const signal = request.getSignal();
    await this.turn(signal);
    try {
      const agent = this.agentFor(request.getAgent());
      if (agent) request.setAgent(agent);
      const response = await fetchLibrary.send(request).toPromise();
      // The whole body inside the turn: the connection is free again only once it is read.
      const body = await response.body.binary();
      return new ResponseContext(response.httpStatusCode, response.headers, new SelfDecodingBody(Promise.resolve(body)));
    } catch (error) {
      // node-fetch rejects an aborted request with its own AbortError; the abort's reason (a write
      // fence's WriteFenced: clients.ts) says why.
      throw signal?.aborted && signal.reason instanceof WriteFenced ? signal.reason : error;
    } finally {
      this.next();
    }
  }

  /** Resolves once fewer than `maxSockets` requests are under way; rejects when `signal` aborts first. */
  private turn(signal: AbortSignal | undefined): Promise<void> {
    signal?.throwIfAborted();
    if (this.underWay < this.limits.maxSockets) {
      this.underWay += 1;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const go = () => {
        signal?.removeEventListener("abort", giveUp);
        resolve();
      };
      const giveUp = () => {
        this.waiting.splice(this.waiting.indexOf(go), 1);
        reject(signal?.reason instanceof Error ? signal.reason : new Error("the request was aborted while it waited for a connection"));
      };
      signal?.addEventListener("abort", giveUp, { once: true });
      this.waiting.push(go);
    });
  }

  /** Hands the finished request's turn to the next waiting one. */
  private next(): void {
    const waiting = this.waiting.shift();
    if (waiting) waiting();
    else this.underWay -= 1;
  }

  /** The pool's agent that connects as `perRequest` would, or `perRequest` itself when it is not a plain HTTP(S) agent. */
  private agentFor(perRequest: http.Agent | undefined): http.Agent | undefined {
    if (!perRequest) return perRequest;
    const secure = perRequest.constructor === https.Agent;
    if (!secure && perRequest.constructor !== http.Agent) return perRequest;
    const tls = tlsOptionsOf(perRequest as https.Agent);
    const fingerprint = `${secure ? "https" : "http"}:${fingerprintOf(tls)}`;
    if (this.current?.fingerprint !== fingerprint) {
      // No `maxSockets` on the agent (see above): the turns bound the connections.
      const options: https.AgentOptions = { ...tls, keepAlive: true, maxFreeSockets: this.limits.maxSockets, timeout: this.limits.idleMs, scheduling: "lifo" };
      this.current = { fingerprint, agent: secure ? new https.Agent(options) : new http.Agent(options) };
    }
    return this.current.agent;
  }
}

function tlsOptionsOf(agent: https.Agent): TlsOptions {
  const tls: Record<string, unknown> = {};
  for (const name of tlsOptionNames) {
    const value: unknown = agent.options[name];
    if (value !== undefined) tls[name] = value;
  }
  return tls;
}

function fingerprintOf(tls: TlsOptions): string {
  const hash = createHash("sha256");
  const add = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(add);
    else if (Buffer.isBuffer(value)) hash.update(value);
    else if (typeof value === "object" && value !== null) hash.update(JSON.stringify(value));
    else hash.update(String(value));
    hash.update("\0");
  };
  for (const name of tlsOptionNames) {
    hash.update(`${name}=`);
    add(tls[name]);
  }
  return hash.digest("hex");
}

const pools = new WeakMap<object, ConnectionPool>();

/** One pool for every API client of `config`, so that they share their connections. */
export function connectionPoolOf(config: object): ConnectionPool {
  let pool = pools.get(config);
  if (!pool) {
    pool = new ConnectionPool();
    pools.set(config, pool);
  }
  return pool;
}
