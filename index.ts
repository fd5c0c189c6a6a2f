// The install program (`pulumi up` in this folder): wiring only. It installs appstack's CRDs; the
// namespace, RBAC, state storage and the operator Deployment come with the in-cluster install.
import { AppstackCrds } from "./components/crds.ts";

const crds = new AppstackCrds("appstack");

export const customResourceDefinitions = crds.names;
