// Whether a live object still says what appstack applied: every field of the manifest must hold
// its value in the live object. Fields the manifest does not set (the API server's defaults,
// another manager's additions) are not appstack's, exactly as server-side apply sees ownership,
// so a repair can always undo what this reports and never fights another manager's own field.

/** The key that identifies an item of a list, as the list-map keys of the Kubernetes API do. */
function itemKey(item: unknown): string | undefined {
  if (!item || typeof item !== "object") return undefined;
  const record = item as Record<string, unknown>;
  for (const key of ["uid", "name"]) if (typeof record[key] === "string") return record[key];
  return undefined;
}

function segment(key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `.${key}` : `[${key}]`;
}

function show(value: unknown): string {
  return value === undefined ? "missing" : JSON.stringify(value);
}

const binarySuffixes: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const decimalSuffixes: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

/**
 * A resource quantity as a number ("500m" is 0.5, "1Gi" is 2^30). The API server stores quantities
 * in canonical form ("0.5" comes back as "500m"), so they compare by value. client-node's own
 * parser is not exported and refuses fractions of binary suffixes ("1.5Gi"), which the schema allows.
 */
export function quantityValue(text: string): number | undefined {
  const match = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/.exec(text);
  if (!match) return undefined;
  const number = Number(match[1]);
  const suffix = match[2] ?? "";
  if (/^[eE]/.test(suffix)) return number * 10 ** Number(suffix.slice(1));
  return number * (binarySuffixes[suffix] ?? decimalSuffixes[suffix] ?? NaN);
}

function sameScalar(desired: unknown, live: unknown, path: string): boolean {
  if (desired === live) return true;
  // An empty string is omitted by the API server (`omitempty`): absent is the same.
  if (desired === "" && live === undefined) return true;
  // A quantity may be written as a number (int-or-string): the API server keeps it as a string.
  if (/resources\.(requests|limits)[.[]/.test(path) && (typeof desired === "string" || typeof desired === "number") && typeof live === "string") {
    const a = quantityValue(String(desired));
    return a !== undefined && a === quantityValue(live);
  }
  return false;
}

function isEmpty(value: unknown): boolean {
  return value === undefined || (Array.isArray(value) && value.length === 0) || (typeof value === "object" && value !== null && Object.keys(value).length === 0);
}

function listDifferences(desired: unknown[], live: unknown, path: string): string[] {
  if (!Array.isArray(live)) return isEmpty(desired) && live === undefined ? [] : [`${path}: ${show(live)}, want ${show(desired)}`];
  if (desired.every((item) => itemKey(item) !== undefined)) {
    // A list map: each item is found by its key, wherever it is; items others added are theirs.
    return desired.flatMap((item) => {
      const key = itemKey(item)!;
      return differences(item, live.find((candidate) => itemKey(candidate) === key), `${path}[${key}]`);
    });
  }
  // An atomic list (container args): the whole list is one value.
  return JSON.stringify(desired) === JSON.stringify(live) ? [] : [`${path}: ${show(live)}, want ${show(desired)}`];
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
