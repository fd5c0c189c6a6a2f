// Imported first by each entry point (cli.ts, main.ts), before any module that loads the Pulumi
// SDK: ES modules run in import order, and the hook must be in place when the SDK's CommonJS
// modules are required.
import { trimSdk } from "../pulumi/sdk-footprint.ts";

trimSdk();
