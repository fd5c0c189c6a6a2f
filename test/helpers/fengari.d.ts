// The part of fengari (a Lua 5.3 VM in JavaScript, 0.1.5) that test/helpers/argocd-health.ts uses; the package has no types.
declare module "fengari" {
  type LuaState = { readonly __luaState: unique symbol };
  type LuaString = Uint8Array;
  export function to_luastring(text: string): LuaString;
  export const lua: {
    readonly LUA_OK: number;
    readonly LUA_TNIL: number;
    lua_pushnil(L: LuaState): void;
    lua_pushboolean(L: LuaState, value: boolean): void;
    lua_pushinteger(L: LuaState, value: number): void;
    lua_pushnumber(L: LuaState, value: number): void;
    lua_pushstring(L: LuaState, value: LuaString): void;
    lua_createtable(L: LuaState, arrayItems: number, fields: number): void;
    lua_rawseti(L: LuaState, index: number, key: number): void;
    lua_setfield(L: LuaState, index: number, key: LuaString): void;
    lua_setglobal(L: LuaState, name: LuaString): void;
    lua_getfield(L: LuaState, index: number, key: LuaString): number;
    lua_pcall(L: LuaState, args: number, results: number, handler: number): number;
    lua_istable(L: LuaState, index: number): boolean;
    lua_tojsstring(L: LuaState, index: number): string;
    lua_pop(L: LuaState, count: number): void;
    lua_close(L: LuaState): void;
  };
  export const lauxlib: {
    luaL_newstate(): LuaState;
    luaL_loadstring(L: LuaState, source: LuaString): number;
  };
  export const lualib: {
    luaL_openlibs(L: LuaState): void;
  };
}
