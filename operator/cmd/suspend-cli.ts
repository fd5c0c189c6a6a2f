// `appstack suspend app/web` and `appstack resume app/web`: spec.suspend true or false, by a JSON
// merge patch (as `kubectl patch --type=merge`): the operator stops acting on the object, or
// applies what changed meanwhile (controller/suspension.ts).
import { mergePatch } from "../kube/clients.ts";
import { parseCommandLine, UsageError } from "./flags.ts";
import { cliClients, errorText, kubeOptions, namespaceOf, parseObjectRef, objectRefUsage } from "./kube-flags.ts";
import { resourceOf } from "../../components/kinds.ts";

export const suspendUsage = (verb: "suspend" | "resume"): string => `usage: appstack ${verb} ${objectRefUsage} [-n NS] [--context=NAME] [--kubeconfig=PATH] [--as=USER]
  ${verb === "suspend" ? "sets spec.suspend: true: no pulumi up, no drift repair, no preview until it is resumed; a deletion leaves the children in place" : "sets spec.suspend: false: the operator applies whatever changed while it was suspended"}.
  Exit code 0: done, 1: not.`;

/** The field manager of the write: a person's, through this command. */
export const suspendFieldManager = "appstack-suspend";

async function setSuspend(verb: "suspend" | "resume", argv: readonly string[]): Promise<string> {
  const usage = suspendUsage(verb);
  const { values, positionals } = parseCommandLine(argv, kubeOptions, usage);
  if (positionals.length !== 1) throw new UsageError(`name one object\n${usage}`);
  if (values["all-namespaces"] || values.output) throw new UsageError(`${verb} takes one object in one namespace, and prints no data (no -A, no -o)\n${usage}`);
  const { kind, name } = parseObjectRef(positionals[0], usage);
  const clients = cliClients(values);
  const namespace = namespaceOf(values, clients.config);
  const body = { spec: { suspend: verb === "suspend" } };
  await clients.custom.patchNamespacedCustomObject({ ...resourceOf(kind), namespace, name, body, fieldManager: suspendFieldManager }, mergePatch);
  const label = `${kind.toLowerCase()}/${name} in namespace ${namespace}`;
  return verb === "suspend" ? `suspended ${label}: nothing is applied or repaired until \`appstack resume\`` : `resumed ${label}: the operator applies what changed meanwhile (see \`appstack status\`)`;
}

export function suspendCli(verb: "suspend" | "resume"): (argv: readonly string[]) => Promise<number> {
  return async (argv) => {
    try {
      process.stderr.write((await setSuspend(verb, argv)) + "\n");
      return 0;
    } catch (error) {
      if (error instanceof UsageError) throw error;
      process.stderr.write(`appstack ${verb}: ${errorText(error)}\n`);
      return 1;
    }
  };
}
