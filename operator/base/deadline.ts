// One way to bound a wait: the work goes on, the caller stops waiting for it and decides what to
// do about it (a renewal counts as failed, a shutdown kills its engines).
export const timedOut: unique symbol = Symbol("timed out");

/** `work`'s value, or `timedOut` once `ms` have passed without one. */
export function withinDeadline<T>(work: Promise<T>, ms: number): Promise<T | typeof timedOut> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<typeof timedOut>((resolve) => (timer = setTimeout(() => resolve(timedOut), ms)));
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
