// A seeded random source for the fault tests: a failing run prints its seed, and the seed replays
// the same choices (timing may still differ).

export interface Random {
  readonly seed: number;
  /** In [0, 1). */
  readonly next: () => number;
  /** An integer in [low, high]. */
  readonly int: (low: number, high: number) => number;
  readonly pick: <T>(items: readonly T[]) => T;
  readonly chance: (probability: number) => boolean;
}

/** mulberry32: small, fast and good enough to spread test inputs. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (low: number, high: number) => low + Math.floor(next() * (high - low + 1));
  return { seed, next, int, pick: (items) => items[int(0, items.length - 1)]!, chance: (probability) => next() < probability };
}

/** The seed from `variable` when set (to replay a run), else a new one; printed either way. */
export function seedFrom(variable: string, what: string): Random {
  const seed = Number(process.env[variable] ?? Date.now() % 1_000_000);
  console.error(`${what} seed: ${seed} (${variable}=${seed} replays it)`);
  return seededRandom(seed);
}
