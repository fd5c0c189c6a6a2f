// Whether a live object still says what appstack applied: every field of the manifest must hold
// its value in the live object, whoever wrote it. Fields the manifest does not set are judged by
// who set them (additions.ts): the API server's defaults and the cluster's controllers' are not
// drift, what a person or a tool added to the spec is.
import { canonicalJson } from "../base/canonical-json.ts";

/** The key that identifies an item of a list, as the list-map keys of the Kubernetes API do. */
export function itemKey(item: unknown): string | undefined {
  if (!item || typeof item !== "object") return undefined;
  const record = item as Record<string, unknown>;
  for (const key of ["uid", "name"]) if (typeof record[key] === "string") return record[key];
  return undefined;
}

/** A path segment: `.name`, or `[key]` where the key is no identifier. */
export function segment(key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `.${key}` : `[${key}]`;
}

function show(value: unknown): string {
  return value === undefined ? "missing" : JSON.stringify(value);
}

const binaryExponents: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const decimalExponents: Record<string, number> = { n: -9, u: -6, m: -3, "": 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
/** The largest quantity, 2^63-1, in milli units: the API server caps anything larger at it. */
const capMillis = (2n ** 63n - 1n) * 1000n;

/**
 * A quantity of a container's resources in exact milli units ("0.5" and "500m" are both 500), as
 * the API server stores it: canonical ("0.5" comes back as "500m"), more precise than milli
 * rounded up away from zero (core/v1's defaults do so for every resource list: "1n" is stored as
 * "1m"), larger than 2^63-1 capped. Exact integers, because floats are not: 0.009 and 9 × 0.001
 * differ, and "0.009" against the stored "9m" was drift for ever. client-node's own parser is not
 * exported and refuses fractions of binary suffixes ("1.5Gi").
 */
export function quantityMillis(text: string): bigint | undefined {
  const match = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/.exec(text);
  if (!match) return undefined;
  const [, sign, number = "", suffix = ""] = match;
  const [whole = "", fraction = ""] = number.split(".");
  let digits = BigInt(`${whole}${fraction}` || "0");
  // The value is digits × 10^exponent milli units (× 2^(10k) for a binary suffix).
  let exponent = 3 - fraction.length;
  if (suffix in binaryExponents) digits <<= BigInt(binaryExponents[suffix]!);
  else exponent += /^[eE]/.test(suffix) ? Number(suffix.slice(1)) : decimalExponents[suffix]!;
  let millis: bigint;
  if (digits === 0n) millis = 0n;
  else if (exponent > 40) millis = capMillis; // far past the cap: no need to build the number
  else if (exponent >= 0) millis = digits * 10n ** BigInt(exponent);
  else if (exponent < -40 - digits.toString().length) millis = 1n; // far below one milli: rounded up to it
  else {
    const divisor = 10n ** BigInt(-exponent);
    millis = (digits + divisor - 1n) / divisor;
  }
  if (millis > capMillis) millis = capMillis;
  return sign === "-" ? -millis : millis;
}

function sameScalar(desired: unknown, live: unknown, path: string): boolean {
  if (desired === live) return true;
  // An empty string is omitted by the API server (`omitempty`): absent is the same.
  if (desired === "" && live === undefined) return true;
  // A quantity may be written as a number (int-or-string): the API server keeps it as a string.
  if (/resources\.(requests|limits)[.[]/.test(path) && (typeof desired === "string" || typeof desired === "number") && typeof live === "string") {
    const a = quantityMillis(String(desired));
    return a !== undefined && a === quantityMillis(live);
  }
  return false;
}

function isEmpty(value: unknown): boolean {
  return value === undefined || (Array.isArray(value) && value.length === 0) || (typeof value === "object" && value !== null && Object.keys(value).length === 0);
}

function listDifferences(desired: unknown[], live: unknown, path: string): string[] {
  if (!Array.isArray(live)) return isEmpty(desired) && live === undefined ? [] : [`${path}: ${show(live)}, want ${show(desired)}`];
  if (desired.every((item) => itemKey(item) !== undefined)) {
    // A list map: each item is found by its key, wherever it is; items others added are additions.ts's.
    return desired.flatMap((item) => {
      const key = itemKey(item)!;
      return differences(item, live.find((candidate) => itemKey(candidate) === key), `${path}[${key}]`);
    });
  }
  // An atomic list (container args, a NetworkPolicy's rules): the whole list is one value, whatever
  // order the keys of its items come in (the API server's, not the manifest's).
  return canonicalJson(desired) === canonicalJson(live) ? [] : [`${path}: ${show(live)}, want ${show(desired)}`];
}

/**
 * What differs between a manifest and the live object, one line per field such as
 * `spec.replicas: 5, want 2`; empty when the live object carries every field of the manifest.
 */
export function differences(desired: unknown, live: unknown, path = ""): string[] {
  if (desired === undefined || desired === null) return [];
  if (Array.isArray(desired)) return listDifferences(desired, live, path);
  if (typeof desired === "object") {
    if (live === undefined && isEmpty(desired)) return [];
    if (!live || typeof live !== "object" || Array.isArray(live)) return [`${path || "object"}: missing`];
    const record = live as Record<string, unknown>;
    return Object.entries(desired as Record<string, unknown>).flatMap(([key, value]) => differences(value, record[key], `${path}${segment(key)}`.replace(/^\./, "")));
  }
  return sameScalar(desired, live, path) ? [] : [`${path}: ${show(live)}, want ${show(desired)}`];
}
