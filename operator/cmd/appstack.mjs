#!/usr/bin/env node
// The installed `appstack` command: loads the TypeScript sources through tsx, so nothing is built.
import { register } from "tsx/esm/api";

register();
await import("./cli.ts");
