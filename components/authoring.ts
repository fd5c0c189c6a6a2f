// What a kind's author imports: `import { defineKind, childKind, Type, ... } from "appstack/kinds"`
// (package.json exports). A kind file in a folder given with --kinds (APPSTACK_KINDS_DIR,
// appstack:kinds) imports this, wherever the folder is: the folder's loader resolves the
// specifier to this module of the running operator (kind-files.ts). Its Pulumi SDK is the
// operator's own (`pulumi`, `k8s` below, or `@pulumi/pulumi` and `@pulumi/kubernetes` imported
// directly, which the loader resolves to the same copies), so that its resources join the
// operator's programs. Docs: docs/writing-a-kind.md.
export * as pulumi from "@pulumi/pulumi";
export * as k8s from "@pulumi/kubernetes";
// For a kind's tests, which read its sample object (operator/cmd/kind-sample-templates.ts): the
// operator's YAML parser, so that they need no package of their own for it.
export { load as parseYaml } from "js-yaml";
export { Type, stringEnum, stringMap, intOrString, type Static, type TObject, type TProperties, type TSchema } from "../crds/schema-kit.ts";
export { imageSchema } from "../crds/fields.ts";
export type { WorkloadStatus } from "../crds/types.ts";
export { childKind, deploymentChild, networkPolicyChild, serviceChild, type ChildKind, type DeclareChild } from "./child-kind.ts";
export { childLabels, childMetadata, selectorLabels, type Owner } from "./metadata.ts";
export { declareChildren, defineKind, type ChildManifest, type DeclaredChildren, type ObjectOf, type WorkloadComponent, type WorkloadDescription } from "./workload.ts";
