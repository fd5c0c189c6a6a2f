// Who may read /metrics (operator/manager/metrics-auth.ts), against stand-in reviews and a clock of
// the test's: the answers as controller-runtime gives them (401, 403, 500, 200), what is cached for
// how long, and that the caches stay bounded whatever tokens arrive. test/e2e/metrics-auth.test.ts
// runs the same against a real API server.
import assert from "node:assert/strict";
import { test } from "node:test";
import { bearerToken, MetricsAuthorizer, reviewCacheEntries, reviewCacheTtlMs, type Reviews } from "../../operator/manager/metrics-auth.ts";

/** Reviews that know one token per user and allow only `prometheus`; they count what they were asked. */
function standIn(): Reviews & { asked: { tokens: number; access: number }; failing: boolean } {
  const users: Record<string, string> = { "token-prometheus": "system:serviceaccount:monitoring:prometheus", "token-stranger": "system:serviceaccount:default:stranger" };
  const reviews = {
    asked: { tokens: 0, access: 0 },
    failing: false,
    authenticate(token: string) {
      reviews.asked.tokens++;
      if (reviews.failing) return Promise.reject(new Error("connect ECONNREFUSED"));
      const username = users[token];
      return Promise.resolve(username ? { username, groups: ["system:serviceaccounts"] } : undefined);
    },
    authorize(user: { username: string }, verb: string, path: string) {
      reviews.asked.access++;
      if (reviews.failing) return Promise.reject(new Error("connect ECONNREFUSED"));
      return Promise.resolve(user.username.endsWith(":prometheus") && verb === "get" && path === "/metrics");
    },
  };
  return reviews;
}

test("a bearer token is read from the Authorization header only", () => {
  assert.equal(bearerToken("Bearer abc.def"), "abc.def");
  assert.equal(bearerToken("bearer abc"), "abc");
  assert.equal(bearerToken(undefined), undefined);
  assert.equal(bearerToken("Basic dXNlcjpwYXNz"), undefined);
  assert.equal(bearerToken("Bearer "), undefined);
});

test("no token or a bad one: 401; a user not allowed: 403; allowed: 200; the API server failing: 500", async () => {
  const reviews = standIn();
  const authorizer = new MetricsAuthorizer(reviews);
  assert.equal((await authorizer.check(undefined, "GET", "/metrics")).status, 401);
  assert.equal(reviews.asked.tokens, 0, "no review without a token");
  assert.equal((await authorizer.check("Bearer made-up", "GET", "/metrics")).status, 401);
  assert.deepEqual(await authorizer.check("Bearer token-stranger", "GET", "/metrics"), { status: 403, message: "Authorization denied for user system:serviceaccount:default:stranger" });
  assert.deepEqual(await authorizer.check("Bearer token-prometheus", "GET", "/metrics"), { status: 200, user: "system:serviceaccount:monitoring:prometheus" });
  // The verb is the request's method, lower-cased, as a SubjectAccessReview names it.
  assert.equal((await authorizer.check("Bearer token-prometheus", "POST", "/metrics")).status, 403);
  const failing = standIn();
  failing.failing = true;
  const down = new MetricsAuthorizer(failing);
  assert.equal((await down.check("Bearer token-prometheus", "GET", "/metrics")).status, 500);
  // Nothing cached from a failure: the next request asks again.
  failing.failing = false;
  assert.equal((await down.check("Bearer token-prometheus", "GET", "/metrics")).status, 200);
  assert.equal(failing.asked.tokens, 2);
});

test("answers are remembered for controller-runtime's lifetimes: a token for a minute, an allowed user for five, a denied one for thirty seconds", async () => {
  const reviews = standIn();
  let now = 0;
  const authorizer = new MetricsAuthorizer(reviews, () => now);
  for (let scrape = 0; scrape < 4; scrape++) assert.equal((await authorizer.check("Bearer token-prometheus", "GET", "/metrics")).status, 200);
  assert.deepEqual(reviews.asked, { tokens: 1, access: 1 });
  now = reviewCacheTtlMs.token + 1;
  await authorizer.check("Bearer token-prometheus", "GET", "/metrics");
  assert.deepEqual(reviews.asked, { tokens: 2, access: 1 }, "the token reviewed again; the decision still remembered");
  now = reviewCacheTtlMs.allowed + 1;
  await authorizer.check("Bearer token-prometheus", "GET", "/metrics");
  assert.deepEqual(reviews.asked, { tokens: 3, access: 2 });

  const denied = standIn();
  now = 0;
  const strict = new MetricsAuthorizer(denied, () => now);
  await strict.check("Bearer token-stranger", "GET", "/metrics");
  now = reviewCacheTtlMs.token - 1;
  await strict.check("Bearer token-stranger", "GET", "/metrics");
  assert.equal(denied.asked.access, 2, "a denial is asked again after thirty seconds, so that a new binding works soon");
  // A token that did not authenticate is remembered too: a made-up one costs one review a minute.
  await strict.check("Bearer made-up", "GET", "/metrics");
  await strict.check("Bearer made-up", "GET", "/metrics");
  assert.equal(denied.asked.tokens, 2);
});

test("the caches hold at most their bound however many tokens arrive, the oldest dropped first", async () => {
  const reviews = standIn();
  const authorizer = new MetricsAuthorizer(reviews);
  await authorizer.check("Bearer token-prometheus", "GET", "/metrics");
  for (let n = 0; n < reviewCacheEntries + 50; n++) await authorizer.check(`Bearer made-up-${n}`, "GET", "/metrics");
  assert.equal(authorizer.cached.tokens, reviewCacheEntries);
  const asked = reviews.asked.tokens;
  await authorizer.check("Bearer token-prometheus", "GET", "/metrics");
  assert.equal(reviews.asked.tokens, asked + 1, "the oldest entry went first");
  assert.equal(authorizer.cached.tokens, reviewCacheEntries);
});
