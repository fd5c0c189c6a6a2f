// kstatus's readers of an object's fields (util.go's GetIntField and GetStringField, and
// apimachinery's unstructured.NestedFieldNoCopy, NestedInt64 and NestedString that they and
// generic.go use), with the errors Go gives for a field of the wrong type, word for word.

/** An object as the API server returns it, parsed from JSON: no client-node model classes. */
export type Json = { readonly [key: string]: unknown };

export function isMap(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * How Go names a decoded JSON value's type (%T). An integer decodes to int64 and any other number
 * to float64 there; JSON.parse cannot tell `2.0` from `2`, a spelling no API server writes.
 */
export function goType(value: unknown): string {
  if (value === null || value === undefined) return "<nil>";
  if (typeof value === "number") return Number.isInteger(value) ? "int64" : "float64";
  if (typeof value === "boolean") return "bool";
  if (typeof value === "string") return "string";
  return Array.isArray(value) ? "[]interface {}" : "map[string]interface {}";
}

/** The reflect.Kind of the same value, as the unstructured converter's errors name it. */
export function goKind(value: unknown): string {
  const type = goType(value);
  if (type.startsWith("[]")) return "slice";
  return type.startsWith("map") ? "map" : type;
}

/** Go's %v of a value; composite values only roughly, as no rule prints one. */
export function goValue(value: unknown): string {
  if (value === null || value === undefined) return "<nil>";
  if (Array.isArray(value)) return `[${value.map(goValue).join(" ")}]`;
  if (isMap(value)) return `map[${Object.keys(value).sort().map((key) => `${key}:${goValue(value[key])}`).join(" ")}]`;
  return typeof value === "string" ? value : JSON.stringify(value);
}

const jsonPath = (fields: readonly string[]) => `.${fields.join(".")}`;

/** unstructured.NestedFieldNoCopy: found with the value, not found, or an error for a non-map on the way. */
export function nestedField(object: Json, fields: readonly string[]): { found: boolean; value: unknown } {
  let value: unknown = object;
  for (const [i, field] of fields.entries()) {
    if (value === null || value === undefined) return { found: false, value: undefined };
    if (!isMap(value)) {
      throw new Error(`${jsonPath(fields.slice(0, i + 1))} accessor error: ${goValue(value)} is of the type ${goType(value)}, expected map[string]interface{}`);
    }
    // undefined as absent: JSON has none, but an object built in code may.
    if (!Object.hasOwn(value, field) || value[field] === undefined) return { found: false, value: undefined };
    value = value[field];
  }
  return { found: true, value };
}

/** unstructured.NestedInt64: undefined when absent, an error when present and not an integer. */
export function nestedInt64(object: Json, fields: readonly string[]): number | undefined {
  const { found, value } = nestedField(object, fields);
  if (!found) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw new Error(`${jsonPath(fields)} accessor error: ${goValue(value)} is of the type ${goType(value)}, expected int64`);
  }
  return value;
}

/** unstructured.NestedString: undefined when absent, an error when present and not a string. */
export function nestedString(object: Json, fields: readonly string[]): string | undefined {
  const { found, value } = nestedField(object, fields);
  if (!found) return undefined;
  if (typeof value !== "string") throw new Error(`${jsonPath(fields)} accessor error: ${goValue(value)} is of the type ${goType(value)}, expected string`);
  return value;
}

function lenientField(object: Json, fieldPath: string): unknown {
  const fields = fieldPath.split(".");
  if (fields[0] === "") fields.shift();
  try {
    return nestedField(object, fields).value;
  } catch {
    return undefined;
  }
}

/** GetIntField: the integer at a path such as ".spec.replicas", or the default when absent or of another type. */
export function intField(object: Json, fieldPath: string, defaultValue: number): number {
  const value = lenientField(object, fieldPath);
  return typeof value === "number" && Number.isInteger(value) ? value : defaultValue;
}

/** GetStringField: the string at a path, or the default when absent or of another type. */
export function stringField(object: Json, fieldPath: string, defaultValue: string): string {
  const value = lenientField(object, fieldPath);
  return typeof value === "string" ? value : defaultValue;
}
