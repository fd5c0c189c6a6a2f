// A consistent hash ring: each member stands at many points (virtual nodes) of a 32-bit circle,
// and a key belongs to the first member point at or after the key's own hash. A member that joins
// or leaves takes or gives up only the keys next to its own points: about 1/N of them. The hash
// is SHA-256 (node:crypto), the same on every replica and every Node version.
import { createHash } from "node:crypto";

/** Points per member: with 100, the largest share of 3 members stays within about 15% of a third. */
export const defaultVirtualNodes = 100;

function hash32(text: string): number {
  return createHash("sha256").update(text).digest().readUInt32BE(0);
}

export class HashRing {
  private readonly points: { readonly at: number; readonly member: string }[];

  constructor(members: Iterable<string>, virtualNodes = defaultVirtualNodes) {
    const points: { at: number; member: string }[] = [];
    for (const member of new Set(members)) for (let i = 0; i < virtualNodes; i++) points.push({ at: hash32(`${member}#${i}`), member });
    // Ties (two points at one hash) are broken by name, so every replica builds the same ring.
    this.points = points.sort((a, b) => a.at - b.at || (a.member < b.member ? -1 : a.member > b.member ? 1 : 0));
  }

  /** The member that owns `key`; undefined on an empty ring. */
  owner(key: string): string | undefined {
    if (this.points.length === 0) return undefined;
    const at = hash32(key);
    let low = 0;
    let high = this.points.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.points[middle]!.at < at) low = middle + 1;
      else high = middle;
    }
    return this.points[low % this.points.length]!.member;
  }
}
