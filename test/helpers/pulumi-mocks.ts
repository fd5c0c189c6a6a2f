// Pulumi's mocks for unit tests of the components: every resource a component registers is
// recorded with its inputs, so a test reads exactly what would reach the engine.
import * as pulumi from "@pulumi/pulumi";

export interface Registered {
  readonly type: string;
  readonly name: string;
  readonly inputs: Record<string, unknown>;
}

/** Installs the mocks (project appstack, stack test); returns the list every registration is added to. Import components after it. */
export async function recordRegistrations(): Promise<Registered[]> {
  const registered: Registered[] = [];
  await pulumi.runtime.setMocks(
    {
      newResource(args) {
        registered.push({ type: args.type, name: args.name, inputs: args.inputs as Record<string, unknown> });
        return { id: `${args.name}-id`, state: args.inputs as Record<string, unknown> };
      },
      call: (args) => args.inputs as Record<string, unknown>,
    },
    "appstack",
    "test",
    false,
  );
  return registered;
}

/** Resolves once `resource` itself is registered (its children register after it). */
export async function registeredResource(resource: pulumi.Resource): Promise<void> {
  await new Promise<void>((resolve) => pulumi.output(resource.urn).apply(() => resolve()));
}
