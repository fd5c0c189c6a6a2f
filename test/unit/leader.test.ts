// Leader election under injected faults, against an in-memory Lease with the API server's
// compare-and-swap: API errors, a holder whose clock is far behind, a lease call that hangs, a
// renewal answered late, and the wall clock stepped while a standby watches.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V1MicroTime, type V1Lease } from "@kubernetes/client-node";
import { LeaderElector, type LeaseApi, type LeaseSettings } from "../../operator/manager/leader.ts";
import { createLogger } from "../../operator/base/log.ts";

const log = createLogger({ level: "error", format: "json", write: () => undefined });
const timing = { leaseDurationSeconds: 1, renewDeadlineMs: 600, retryPeriodMs: 50 };
const settings = (identity: string): LeaseSettings => ({ namespace: "default", name: "appstack", identity, ...timing });

function apiError(code: number): Error {
  return Object.assign(new Error(`HTTP-Code: ${code}`), { code });
}

/** One Lease, with resourceVersion checks; `fault` runs before every call and may throw or hang. */
class FakeLeases implements LeaseApi {
  lease: V1Lease | undefined;
  private version = 0;
  fault: (call: string) => Promise<void> = () => Promise.resolve();

  async readNamespacedLease(): Promise<V1Lease> {
    await this.fault("read");
    if (!this.lease) throw apiError(404);
    return structuredClone(this.lease);
  }

  async createNamespacedLease({ body }: { body: V1Lease }): Promise<V1Lease> {
    await this.fault("create");
    if (this.lease) throw apiError(409);
    this.lease = { ...body, metadata: { ...body.metadata, resourceVersion: String(++this.version) } };
    return this.lease;
  }

  async replaceNamespacedLease({ body }: { body: V1Lease }): Promise<V1Lease> {
    await this.fault("replace");
    if (body.metadata?.resourceVersion !== this.lease?.metadata?.resourceVersion) throw apiError(409);
    this.lease = { ...body, metadata: { ...body.metadata, resourceVersion: String(++this.version) } };
    return this.lease;
  }

  /** What a live holder does: renew, with whatever its clock says. */
  renewAs(identity: string, renewTime: Date): void {
    this.lease = { metadata: { name: "appstack", namespace: "default", resourceVersion: String(++this.version) }, spec: { holderIdentity: identity, leaseDurationSeconds: 1, renewTime: new V1MicroTime(renewTime) } };
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("a standby keeps contending through API errors and takes over once the API answers", async () => {
  const leases = new FakeLeases();
  let failures = 0;
  leases.fault = () => (failures++ < 5 ? Promise.reject(apiError(500)) : Promise.resolve());
  const elector = new LeaderElector(leases, settings("b"), log);
  await elector.acquire();
  assert.equal(elector.state, "leading");
  assert.equal(leases.lease?.spec?.holderIdentity, "b");
  assert.ok(failures > 5);
  elector.stop();
});

test("a holder whose clock is an hour behind keeps the lease while it renews; one that stops renewing loses it", async () => {
  const leases = new FakeLeases();
  const behind = () => new Date(Date.now() - 3_600_000);
  leases.renewAs("a", behind());
  const renewing = setInterval(() => leases.renewAs("a", behind()), 100);
  const standby = new LeaderElector(leases, settings("b"), log);
  const acquired = standby.acquire();
  let won = false;
  void acquired.then(() => (won = true));
  // Three lease durations of a live holder, by the standby's own clock.
  await sleep(3_000);
  assert.equal(won, false, "the standby took over from a live holder with a skewed clock");
  clearInterval(renewing);
  await acquired;
  assert.equal(leases.lease?.spec?.holderIdentity, "b");
  standby.stop();
});

test("a leader whose renewal hangs gives up within the renew deadline", async () => {
  const leases = new FakeLeases();
  const elector = new LeaderElector(leases, settings("a"), log);
  await elector.acquire();
  let hang = false;
  leases.fault = () => (hang ? new Promise<void>(() => undefined) : Promise.resolve());
  const started = Date.now();
  const lost = new Promise<number>((resolve) => void elector.keepRenewing(() => resolve(Date.now() - started)));
  hang = true;
  const after = await Promise.race([lost, sleep(5_000).then(() => -1)]);
  assert.notEqual(after, -1, "never gave up the lease");
  assert.ok(after <= timing.renewDeadlineMs + 3 * timing.retryPeriodMs, `gave up after ${after} ms`);
  elector.stop();
});

test("a released lease is taken over at once", async () => {
  const leases = new FakeLeases();
  const first = new LeaderElector(leases, settings("a"), log);
  await first.acquire();
  await first.release();
  const started = Date.now();
  const second = new LeaderElector(leases, settings("b"), log);
  await second.acquire();
  assert.ok(Date.now() - started < 500);
  second.stop();
});

test("the renew deadline counts from when the renewal that succeeded was sent, not from its answer", async () => {
  // A clock of the test's: it moves only when the test says.
  let clock = 1_000;
  const leases = new FakeLeases();
  const elector = new LeaderElector(leases, settings("a"), log, () => clock);
  await elector.acquire();
  const sentAt = clock;
  let phase: "slow answer" | "failing" = "slow answer";
  let failedCalls = 0;
  let tooMany!: () => void;
  const kept = new Promise<string>((resolve) => (tooMany = () => resolve("still leading")));
  leases.fault = (call) => {
    if (phase === "slow answer") {
      // The renewal's write reaches the API server at `sentAt`; its answer comes 500 ms later.
      if (call === "replace") {
        clock += 500;
        phase = "failing";
      }
      return Promise.resolve();
    }
    // Then every call fails, and the clock stands at the renew deadline counted from the send:
    // the standby's lease duration may have begun at `sentAt`, so this leader must give up now.
    clock = sentAt + timing.renewDeadlineMs;
    if (++failedCalls === 3) tooMany();
    return Promise.reject(apiError(500));
  };
  const lost = new Promise<string>((resolve) => void elector.keepRenewing(() => resolve("lost")));
  const outcome = await Promise.race([lost, kept]);
  elector.stop();
  assert.equal(outcome, "lost", "counted the renew deadline from the renewal's answer");
  assert.equal(failedCalls, 1, "gave up at the first failure past the deadline");
});

test("a standby's clock is monotonic: the wall clock stepped forward by an hour does not expire a live holder's lease", async (t) => {
  const leases = new FakeLeases();
  leases.renewAs("a", new Date());
  // The wall clock as this process sees it, which the test steps as NTP would.
  const wall = Date.now.bind(Date);
  let step = 0;
  t.mock.method(Date, "now", () => wall() + step);
  let reads = 0;
  let thirdRead!: () => void;
  const readAgain = new Promise<string>((resolve) => (thirdRead = () => resolve("still following")));
  leases.fault = (call) => {
    if (call !== "read") return Promise.resolve();
    // Between the standby's first and second look at the unchanged record, the wall clock steps.
    if (++reads === 2) step = 3_600_000;
    // A third look means the second attempt ended without the lease.
    if (reads === 3) thirdRead();
    return Promise.resolve();
  };
  const standby = new LeaderElector(leases, settings("b"), log);
  const outcome = await Promise.race([standby.acquire().then(() => "took over", () => "stopped"), readAgain]);
  standby.stop();
  assert.equal(outcome, "still following", "a step of the wall clock expired the live holder's lease");
  assert.equal(leases.lease?.spec?.holderIdentity, "a");
});

test("a leader that stops contending goes on renewing its lease until it releases it, and still reports the lease lost", async () => {
  const leases = new FakeLeases();
  const leader = new LeaderElector(leases, settings("a"), log);
  await leader.acquire();
  let renewals = 0;
  let renewedTwice!: () => void;
  const twice = new Promise<void>((resolve) => (renewedTwice = resolve));
  leases.fault = (call) => (call === "replace" && ++renewals === 2 && renewedTwice(), Promise.resolve());
  let lost = false;
  void leader.keepRenewing(() => (lost = true));
  // What a shutdown does first: operations still run, so the lease must not lapse.
  leader.stopContending();
  await twice;
  assert.equal(leases.lease?.spec?.holderIdentity, "a");
  await leader.release();
  assert.equal(leases.lease?.spec?.holderIdentity, undefined, "the lease was not handed over");
  assert.equal(lost, false);

  // Renewing fails while stopping: the loss is reported, so that the replica kills its operations.
  const second = new LeaderElector(leases, settings("b"), log);
  await second.acquire();
  const reported = new Promise<void>((resolve) => void second.keepRenewing(resolve));
  second.stopContending();
  leases.fault = () => Promise.reject(apiError(500));
  await reported;
  second.stop();

  // A standby that stops contending gives up at once and never writes the lease.
  leases.fault = () => Promise.resolve();
  leases.renewAs("c", new Date());
  const standby = new LeaderElector(leases, settings("d"), log);
  const acquiring = standby.acquire();
  standby.stopContending();
  await assert.rejects(acquiring, /stopped before the lease was acquired/);
  assert.equal(leases.lease?.spec?.holderIdentity, "c");
});

test("sharded, a holder frozen past its renew deadline gives the lease up when it resumes, without renewing it, and holds it no more meanwhile", async () => {
  // A clock of the test's: the freeze is a jump of it while the renewal loop sleeps.
  let clock = 1_000;
  const leases = new FakeLeases();
  const elector = new LeaderElector(leases, { ...settings("a"), giveUpWhenLapsed: true }, log, () => clock);
  await elector.acquire();
  assert.equal(elector.holdsNow(), true);
  let writes = 0;
  leases.fault = (call) => (call === "replace" && writes++, Promise.resolve());
  // Frozen (SIGSTOP, a paused VM) for longer than the renew deadline: nobody took the lease, so a
  // renewal would succeed, but every other replica may have acted on its expiry meanwhile.
  clock += timing.renewDeadlineMs + 1;
  assert.equal(elector.holdsNow(), false, "still held by its own clock after the renew deadline");
  const lost = new Promise<string>((resolve) => void elector.keepRenewing(() => resolve("lost")));
  const outcome = await Promise.race([lost, sleep(1_000).then(() => "still holding")]);
  elector.stop();
  assert.equal(outcome, "lost");
  assert.equal(writes, 0, "renewed a lease that had lapsed while it was frozen");
});
