// Generated hostile input for App and Memcached objects: names at and past every length limit,
// unicode and control characters, extreme and mistyped numbers, unknown fields, duplicate and
// very long env lists. Each generator mixes valid values in, so that a share of the objects is
// accepted and goes on to the operator.
import type { Random } from "./random.ts";

const unicode = ["ñandú", "日本語", "🚀", "Ω≈ç√", "\u200b", "\u0000", "\t", "\n", "ʇxǝʇ", "Ⅻ", "ﬀ", "İ", "\ud800"];
const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";

function letters(random: Random, length: number, from = alphabet): string {
  let text = "";
  for (let i = 0; i < length; i++) text += from[random.int(0, from.length - 1)];
  return text;
}

// Long values are shared by length: thousands of objects with 500 variables of 32 KiB each would
// not fit in memory otherwise, and their content does not matter, only their size.
const longValues = new Map<number, string>();
function long(random: Random, length: number): string {
  let value = longValues.get(length);
  if (value === undefined) longValues.set(length, (value = letters(random, length)));
  return value;
}

function anyString(random: Random, maxLength = 64): string {
  const length = random.int(0, maxLength);
  let text = "";
  while (text.length < length) text += random.chance(0.3) ? random.pick(unicode) : letters(random, random.int(1, 8), alphabet + "-._:/@ ABCXYZ");
  return text;
}

/** A DNS label of `length` characters, valid when 1..63. */
function label(random: Random, length: number): string {
  if (length <= 2) return letters(random, length, "abcdefghijklmnopqrstuvwxyz");
  return letters(random, 1, "abcdefghijklmnopqrstuvwxyz") + letters(random, length - 2, alphabet + "-") + letters(random, 1, alphabet);
}

export function hostileName(random: Random): string {
  if (random.chance(0.5)) return `h-${letters(random, 8)}`;
  return random.pick<() => string>([
    () => label(random, random.int(3, 62)),
    () => label(random, 63),
    () => label(random, 64),
    () => Array.from({ length: 4 }, () => label(random, 63)).join(".").slice(0, 253).replace(/[.-]$/, "x"),
    () => `${label(random, 63)}.${label(random, 63)}.${label(random, 63)}.${label(random, 62)}`,
    () => label(random, random.int(1, 30)).toUpperCase(),
    () => `h-${random.pick(unicode)}`,
    () => `-h${letters(random, 4)}`,
    () => "",
    () => anyString(random, 300),
    () => `h..${letters(random, 3)}`,
  ])();
}

function anyNumber(random: Random): unknown {
  return random.pick<unknown>([0, 1, 2, 3, -1, 1.5, 100, 101, 1000, 1001, 65535, 65536, 2 ** 31, 2 ** 31 - 1, 2 ** 53 + 2, -(2 ** 63), 1e308, "3", "", null, true, [], {}]);
}

function smallOrHostile(random: Random, low: number, high: number): unknown {
  return random.chance(0.6) ? random.int(low, high) : anyNumber(random);
}

function image(random: Random): unknown {
  return random.pick<() => unknown>([
    () => "nginx:1.27",
    () => `registry.example.test/${letters(random, 6)}/${letters(random, 5)}:${letters(random, 3)}`,
    () => `nginx@sha256:${letters(random, 64, "0123456789abcdef")}`,
    () => "",
    () => " ",
    () => `nginx ${letters(random, 3)}`,
    () => anyString(random, 40),
    () => long(random, 1025),
    () => long(random, 1024),
    () => 42,
    () => null,
  ])();
}

function envName(random: Random): unknown {
  return random.pick<() => unknown>([
    () => `VAR_${letters(random, 4).toUpperCase()}`,
    () => "DUPLICATE",
    () => "",
    () => `1${letters(random, 3)}`,
    () => anyString(random, 20),
    () => long(random, 257).toUpperCase(),
    () => 7,
  ])();
}

function envList(random: Random): unknown {
  const length = random.pick([0, 1, 3, 10, 127, 128, 129, 500]);
  const valueLength = random.pick([0, 8, 200, 4096, 32768, 32769]);
  return Array.from({ length }, (_, i) => {
    const entry: Record<string, unknown> = { name: random.chance(0.7) ? `VAR_${i}` : envName(random) };
    if (random.chance(0.8)) entry["value"] = random.chance(0.5) ? anyString(random, Math.min(valueLength, 64)) : long(random, valueLength);
    if (random.chance(0.05)) entry["valueFrom"] = { secretKeyRef: { name: "x", key: "y" } };
    return entry;
  });
}

function quantity(random: Random): unknown {
  return random.pick<unknown>(["100m", "0.5", "1", "128Mi", "1Gi", "1e3", "-1", "1.5.5", "abc", "", "∞", 2, 1e308, "999999999999999999999Ei", null]);
}

function resourceList(random: Random): Record<string, unknown> {
  const names = ["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", anyString(random, 12)];
  return Object.fromEntries(Array.from({ length: random.int(0, 7) }, () => [random.pick(names), quantity(random)]));
}

function updatePolicy(random: Random): unknown {
  return random.pick<unknown>(["Auto", "Auto", "Preview", "auto", "", "Manual", 1]);
}

function maybe(random: Random, spec: Record<string, unknown>, key: string, value: () => unknown, probability = 0.5): void {
  if (random.chance(probability)) spec[key] = value();
}

function appSpec(random: Random): Record<string, unknown> {
  const spec: Record<string, unknown> = {};
  maybe(random, spec, "image", () => image(random), 0.9);
  maybe(random, spec, "replicas", () => smallOrHostile(random, 0, 3), 0.8);
  maybe(random, spec, "port", () => (random.chance(0.6) ? random.int(1, 65535) : anyNumber(random)));
  maybe(random, spec, "env", () => envList(random), 0.4);
  maybe(random, spec, "resources", () => ({ requests: resourceList(random), limits: resourceList(random) }), 0.3);
  maybe(random, spec, "updatePolicy", () => updatePolicy(random), 0.3);
  return spec;
}

function memcachedSpec(random: Random): Record<string, unknown> {
  const spec: Record<string, unknown> = {};
  maybe(random, spec, "size", () => smallOrHostile(random, 0, 3), 0.9);
  maybe(random, spec, "image", () => image(random), 0.4);
  maybe(random, spec, "updatePolicy", () => updatePolicy(random), 0.3);
  return spec;
}

function stringMap(random: Random): Record<string, unknown> {
  const keys = [() => `example.test/${letters(random, 5)}`, () => letters(random, 10), () => anyString(random, 20), () => `${label(random, 64)}/x`, () => "appstack.dev/approve"];
  return Object.fromEntries(Array.from({ length: random.int(0, 4) }, () => [random.pick(keys)(), random.chance(0.8) ? anyString(random, 70) : random.pick<unknown>([1, null, long(random, 300_000)])]));
}

export interface HostileObject {
  readonly body: Record<string, unknown>;
  /** Whether unknown fields are refused (kubectl's default) or dropped with a warning. */
  readonly strict: boolean;
}

export function hostileObject(random: Random, namespace: string): HostileObject {
  const kind = random.chance(0.7) ? "App" : "Memcached";
  const metadata: Record<string, unknown> = { name: hostileName(random), namespace };
  if (random.chance(0.3)) metadata["labels"] = stringMap(random);
  if (random.chance(0.3)) metadata["annotations"] = stringMap(random);
  const body: Record<string, unknown> = { apiVersion: "appstack.dev/v1alpha1", kind, metadata };
  const spec = kind === "App" ? appSpec(random) : memcachedSpec(random);
  if (random.chance(0.1)) spec[random.pick(["replicaz", "selector", "template", anyString(random, 10)])] = anyNumber(random);
  body["spec"] = random.chance(0.03) ? random.pick<unknown>(["nginx", [], 3, null]) : spec;
  if (random.chance(0.05)) body["status"] = { conditions: [{ type: "Ready", status: "True" }], observedGeneration: 99 };
  if (random.chance(0.03)) body[letters(random, 6)] = anyString(random);
  return { body, strict: random.chance(0.5) };
}
