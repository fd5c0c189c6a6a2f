// Argo CD's health check of appstack's objects (deploy/argocd/health.lua), run as Argo CD runs a
// resource customization: the object, as the API server returned it, is the global `obj`, and the
// script returns a table with `status` and `message`. The interpreter is fengari, Lua 5.3 in
// JavaScript; the script keeps to Lua 5.1, which Argo CD's gopher-lua runs.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { lauxlib, lua, lualib, to_luastring } from "fengari";
import { repoRoot } from "../../toolchain/tools.ts";
import type { KstatusStatus } from "./kstatus.ts";

export type ArgoHealth = "Healthy" | "Progressing" | "Degraded" | "Suspended" | "Missing" | "Unknown";

export interface ArgoHealthReading {
  readonly status: ArgoHealth;
  readonly message: string;
}

export const healthScriptPath = join(repoRoot, "deploy/argocd/health.lua");
const script = readFileSync(healthScriptPath, "utf8");

type LuaState = ReturnType<typeof lauxlib.luaL_newstate>;

/** Pushes a JSON value as Argo CD hands it to Lua: objects and arrays as tables (arrays from 1), null as nil. */
function push(L: LuaState, value: unknown): void {
  if (value === null || value === undefined) lua.lua_pushnil(L);
  else if (typeof value === "boolean") lua.lua_pushboolean(L, value);
  else if (typeof value === "number") {
    if (Number.isInteger(value)) lua.lua_pushinteger(L, value);
    else lua.lua_pushnumber(L, value);
  } else if (typeof value === "string") lua.lua_pushstring(L, to_luastring(value));
  else if (Array.isArray(value)) {
    lua.lua_createtable(L, value.length, 0);
    value.forEach((item, index) => {
      push(L, item);
      lua.lua_rawseti(L, -2, index + 1);
    });
  } else if (typeof value === "object") {
    const entries = Object.entries(value);
    lua.lua_createtable(L, 0, entries.length);
    for (const [key, item] of entries) {
      push(L, item);
      lua.lua_setfield(L, -2, to_luastring(key));
    }
  } else throw new Error(`no Lua value for ${typeof value}`);
}

function field(L: LuaState, name: string): string {
  lua.lua_getfield(L, -1, to_luastring(name));
  const text = lua.lua_tojsstring(L, -1);
  lua.lua_pop(L, 1);
  return text;
}

/** What the health check says of `object` (an App or Memcached as the API server returned it). */
export function argoHealth(object: object): ArgoHealthReading {
  const L = lauxlib.luaL_newstate();
  try {
    lualib.luaL_openlibs(L);
    // A copy through JSON: what the API server sent, with no undefined left in it.
    push(L, JSON.parse(JSON.stringify(object)));
    lua.lua_setglobal(L, to_luastring("obj"));
    if (lauxlib.luaL_loadstring(L, to_luastring(script)) !== lua.LUA_OK || lua.lua_pcall(L, 0, 1, 0) !== lua.LUA_OK) {
      throw new Error(`deploy/argocd/health.lua failed: ${lua.lua_tojsstring(L, -1)}`);
    }
    if (!lua.lua_istable(L, -1)) throw new Error("deploy/argocd/health.lua returned no table");
    return { status: field(L, "status") as ArgoHealth, message: field(L, "message") };
  } finally {
    lua.lua_close(L);
  }
}

const fromKstatus: Record<KstatusStatus, ArgoHealth> = { Current: "Healthy", InProgress: "Progressing", Failed: "Degraded", Terminating: "Progressing", NotFound: "Missing", Unknown: "Unknown" };

type Readable = { metadata: { generation?: number; deletionTimestamp?: unknown }; status?: { conditions?: { type: string; reason?: string; observedGeneration?: number }[] } };

/**
 * The health Argo CD should show for an object kstatus reads as `kstatus` (docs/monitoring.md): kstatus's
 * reading, except that an object appstack holds (Ready's reason Suspended for its current
 * generation, and not being deleted) is Suspended.
 */
export function expectedHealth(object: Readable, kstatus: KstatusStatus): ArgoHealth {
  const ready = object.status?.conditions?.find((c) => c.type === "Ready");
  const held = ready?.reason === "Suspended" && ready.observedGeneration === object.metadata.generation && !object.metadata.deletionTimestamp;
  if (held && (kstatus === "Current" || kstatus === "InProgress")) return "Suspended";
  return fromKstatus[kstatus];
}
