// Who may read /metrics, as kubebuilder's scaffolds decide it (controller-runtime's
// filters.WithAuthenticationAndAuthorization): the request's bearer token is checked with a
// TokenReview, and the user it names with a SubjectAccessReview for the non-resource URL and the
// request's verb (`get` on `/metrics`). No token or a bad one: 401; a user not allowed: 403; the
// API server not answering: 500, and nothing cached.
import { createHash } from "node:crypto";

/** A user as a TokenReview names it, and as a SubjectAccessReview asks about it. */
export interface ReviewedUser {
  readonly username: string;
  readonly uid?: string;
  readonly groups?: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/** The two reviews, against the API server (metrics-reviews.ts) or a test's stand-in. */
export interface Reviews {
  /** The token's user, or undefined when the API server does not authenticate it. */
  authenticate(token: string): Promise<ReviewedUser | undefined>;
  /** Whether the user may use `verb` on the non-resource URL `path`. */
  authorize(user: ReviewedUser, verb: string, path: string): Promise<boolean>;
}

export type Verdict = { readonly status: 200; readonly user: string } | { readonly status: 401 | 403 | 500; readonly message: string };

/**
 * controller-runtime's lifetimes: a token's review for 1 minute (authenticated or not), an allowed
 * user for 5 minutes, a denied one for 30 seconds (a binding just made works soon). A removed
 * binding or a revoked token still reads /metrics until its entry ends.
 */
export const reviewCacheTtlMs = { token: 60_000, allowed: 300_000, denied: 30_000 } as const;

/**
 * Entries kept per cache. Anyone who reaches the port chooses the tokens, so an unbounded cache
 * would grow with every made-up one; past the bound the oldest entry goes, which costs at most a
 * review more. Prometheus scrapes with a token or two, far below it.
 */
export const reviewCacheEntries = 1_000;

/** A map whose entries end after their lifetime, holding at most `limit`, the oldest dropped first. */
class ExpiringCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();
  private readonly limit: number;
  private readonly now: () => number;

  constructor(limit: number, now: () => number) {
    this.limit = limit;
    this.now = now;
  }

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until > this.now()) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  set(key: string, value: V, ttlMs: number): void {
    this.entries.delete(key);
    while (this.entries.size >= this.limit) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, until: this.now() + ttlMs });
  }

  get size(): number {
    return this.entries.size;
  }
}

/** The bearer token of an Authorization header, if it has one. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return match?.[1];
}

/** Checks each request's token and user, remembering the API server's answers for a while (reviewCacheTtlMs). */
export class MetricsAuthorizer {
  /** By the token's digest: the tokens themselves are not kept. */
  private readonly tokens: ExpiringCache<ReviewedUser | null>;
  private readonly decisions: ExpiringCache<boolean>;
  private readonly reviews: Reviews;

  constructor(reviews: Reviews, now: () => number = Date.now) {
    this.reviews = reviews;
    this.tokens = new ExpiringCache(reviewCacheEntries, now);
    this.decisions = new ExpiringCache(reviewCacheEntries, now);
  }

  /** The verdict on one request: its Authorization header, its method and path. */
  async check(authorization: string | undefined, method: string, path: string): Promise<Verdict> {
    const token = bearerToken(authorization);
    if (!token) return { status: 401, message: "Unauthorized: a bearer token is required" };
    let user: ReviewedUser | undefined;
    try {
      user = await this.authenticate(token);
    } catch {
      return { status: 500, message: "Authentication failed: the API server did not review the token" };
    }
    if (!user) return { status: 401, message: "Unauthorized" };
    const verb = method.toLowerCase();
    try {
      if (await this.authorize(user, verb, path)) return { status: 200, user: user.username };
    } catch {
      return { status: 500, message: `Authorization for user ${user.username} failed: the API server did not review it` };
    }
    return { status: 403, message: `Authorization denied for user ${user.username}` };
  }

  private async authenticate(token: string): Promise<ReviewedUser | undefined> {
    const key = createHash("sha256").update(token).digest("base64");
    const cached = this.tokens.get(key);
    if (cached !== undefined) return cached ?? undefined;
    const user = await this.reviews.authenticate(token);
    this.tokens.set(key, user ?? null, reviewCacheTtlMs.token);
    return user;
  }

  private async authorize(user: ReviewedUser, verb: string, path: string): Promise<boolean> {
    const key = JSON.stringify([user.username, user.uid, user.groups, user.extra, verb, path]);
    const cached = this.decisions.get(key);
    if (cached !== undefined) return cached;
    const allowed = await this.reviews.authorize(user, verb, path);
    this.decisions.set(key, allowed, allowed ? reviewCacheTtlMs.allowed : reviewCacheTtlMs.denied);
    return allowed;
  }

  /** Entries held now, per cache (for tests of the bound). */
  get cached(): { tokens: number; decisions: number } {
    return { tokens: this.tokens.size, decisions: this.decisions.size };
  }
}
