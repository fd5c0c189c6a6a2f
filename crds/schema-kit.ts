// A kind's spec is written once, in TypeBox: the schema is JSON Schema as written (every
// Kubernetes extension, such as x-kubernetes-validations or a list type, passes through as an
// option), and `Static<>` gives the TypeScript type from the same value. The few shapes a
// structural schema needs that TypeBox writes otherwise are here.
import Type, { type Static, type TSchema } from "typebox";

export { Type, type Static, type TSchema };

/** A string of the given values: a structural schema needs `type` beside `enum`, which TypeBox's Enum leaves out. */
export function stringEnum<const T extends readonly string[]>(values: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<T[number]>({ type: "string", enum: [...values], ...options });
}

/** An object with any keys and values of `value` (`additionalProperties`; TypeBox's Record writes patternProperties, which a structural schema refuses). */
export function stringMap<V extends TSchema>(value: V, options: Record<string, unknown> = {}) {
  return Type.Unsafe<Record<string, Static<V>>>({ type: "object", additionalProperties: value, ...options });
}

/** A Kubernetes quantity or port: an integer or a string (`x-kubernetes-int-or-string`). */
export function intOrString(options: Record<string, unknown> = {}) {
  return Type.Unsafe<number | string>({ "x-kubernetes-int-or-string": true, anyOf: [{ type: "integer" }, { type: "string" }], ...options });
}

export type JsonSchema = Record<string, unknown>;

/**
 * The OpenAPI v3 schema the CRD holds. A property with a default is required in the TypeScript
 * type (the API server fills it in before anyone reads the object) but not in the schema, where a
 * client may leave it out; TypeBox's own markers (symbols) are dropped with the JSON round trip.
 */
export function openApi(schema: TSchema | JsonSchema): JsonSchema {
  return withoutDefaultedRequired(JSON.parse(JSON.stringify(schema)) as JsonSchema);
}

function withoutDefaultedRequired(node: unknown): JsonSchema {
  if (Array.isArray(node)) return node.map(withoutDefaultedRequired) as unknown as JsonSchema;
  if (typeof node !== "object" || node === null) return node as JsonSchema;
  const object = Object.fromEntries<unknown>(Object.entries(node).map(([key, value]) => [key, key === "default" ? value : withoutDefaultedRequired(value)]));
  const properties = object["properties"] as Record<string, JsonSchema> | undefined;
  if (Array.isArray(object["required"]) && properties) {
    const required = (object["required"] as string[]).filter((name) => properties[name]?.["default"] === undefined);
    if (required.length > 0) object["required"] = required;
    else delete object["required"];
  }
  return object;
}
