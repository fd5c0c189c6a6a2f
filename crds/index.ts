import { appCrd } from "./app.ts";
import { memcachedCrd } from "./memcached.ts";
import type { CustomResourceDefinition } from "./schema.ts";

export * from "./types.ts";

export const customResourceDefinitions: readonly CustomResourceDefinition[] = [appCrd, memcachedCrd];
