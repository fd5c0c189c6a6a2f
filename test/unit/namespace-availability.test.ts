// A watched namespace that answers 403 (deleted, or the operator's RoleBinding there gone) is
// told once when it becomes unreadable and once when it is readable again, is retried with a
// bounded backoff, and shows in the metrics; other errors are not taken for it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { httpStatusOf, isForbidden, maxUnreadableRetryMs, NamespaceAvailability, unreadableRetryMs } from "../../operator/controller/namespace-availability.ts";
import { OperatorMetrics } from "../../operator/manager/metrics.ts";

test("a 403 from a list (code) or a watch (statusCode) is forbidden; a 404, a 500 or a network error is not", () => {
  assert.equal(isForbidden({ code: 403 }), true);
  assert.equal(isForbidden(Object.assign(new Error("Forbidden"), { statusCode: 403 })), true);
  assert.equal(isForbidden({ code: 404 }), false);
  assert.equal(isForbidden({ statusCode: 500 }), false);
  assert.equal(isForbidden(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })), false);
  assert.equal(isForbidden(undefined), false);
  assert.equal(httpStatusOf({ code: "ECONNRESET", statusCode: 502 }), 502);
});

test("the retry of an unreadable namespace doubles from 3 s and stops growing at 30 s", () => {
  assert.deepEqual([1, 2, 3, 4, 5, 6, 1_000].map(unreadableRetryMs), [3_000, 6_000, 12_000, 24_000, 30_000, 30_000, 30_000]);
  assert.equal(maxUnreadableRetryMs, 30_000);
});

test("a namespace changes state at its first forbidden informer, and back only once every one of them has read again", () => {
  const availability = new NamespaceAvailability(["gone", "here"]);
  assert.deepEqual([...availability.states()], [["gone", false], ["here", false]]);
  assert.equal(availability.denied("gone", "apps in gone"), "unreadable");
  // The other informers of the namespace, and the same one retried: no second report.
  assert.equal(availability.denied("gone", "pods in gone"), undefined);
  assert.equal(availability.denied("gone", "apps in gone"), undefined);
  assert.equal(availability.unreadable("gone"), true);
  assert.equal(availability.unreadable("here"), false);
  // An informer that never was denied reading: nothing changes.
  assert.equal(availability.read("here", "apps in here"), undefined);
  assert.equal(availability.read("gone", "apps in gone"), undefined);
  assert.equal(availability.unreadable("gone"), true);
  assert.equal(availability.read("gone", "pods in gone"), "readable");
  assert.equal(availability.read("gone", "pods in gone"), undefined);
  assert.deepEqual([...availability.states()], [["gone", false], ["here", false]]);
  assert.equal(availability.denied("gone", "pods in gone"), "unreadable");
});

test("appstack_watched_namespace_unavailable says 1 for an unreadable namespace and 0 for a readable one, and nothing when all are watched", async () => {
  const states = new Map([["gone", true], ["here", false]]);
  const metrics = new OperatorMetrics(() => ({ depth: 0, active: 0 }), () => states);
  const text = await metrics.registry.metrics();
  assert.match(text, /^appstack_watched_namespace_unavailable\{namespace="gone"\} 1$/m);
  assert.match(text, /^appstack_watched_namespace_unavailable\{namespace="here"\} 0$/m);
  states.set("gone", false);
  assert.match(await metrics.registry.metrics(), /^appstack_watched_namespace_unavailable\{namespace="gone"\} 0$/m);
  const all = await new OperatorMetrics(() => ({ depth: 0, active: 0 })).registry.metrics();
  assert.doesNotMatch(all, /^appstack_watched_namespace_unavailable\{/m);
});
