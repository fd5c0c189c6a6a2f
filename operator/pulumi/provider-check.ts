// The check a kept provider passes before any engine attaches to it (provider-slots.ts): that the
// binary speaks appstack's slot protocol. A stock plugin of the same name prints its port too, but
// reads no environment from its input and has no provider per connection; a provider that refuses
// an engine's Attach would fail every operation that uses it. The engines' own way to use a
// running provider (PULUMI_DEBUG_PROVIDERS) is a debug facility, so it is checked, not assumed.
import * as grpc from "@grpc/grpc-js";
import providerGrpc from "@pulumi/pulumi/proto/provider_grpc_pb.js";
import pluginPb from "@pulumi/pulumi/proto/plugin_pb.js";

/** The check failed: kept providers are off, and each operation starts a plugin of its own. */
export class SlotProtocolMismatch extends Error {
  constructor(binary: string, why: string) {
    super(`the kubernetes provider ${binary} does not serve as a kept provider (${why}); each operation starts a provider plugin of its own`);
    this.name = "SlotProtocolMismatch";
  }
}

/**
 * An Attach on a connection of the check's own, as an engine makes: the provider makes a
 * provider for it (talking to an engine address nobody dials, since nothing is called on it),
 * and ends it when the connection closes. Resolves once the provider accepted it.
 */
export async function attachAccepted(port: number, deadlineMs: number): Promise<void> {
  const client = new providerGrpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  try {
    const request = new pluginPb.PluginAttach();
    request.setAddress("127.0.0.1:1");
    await new Promise<void>((resolve, reject) => {
      client.attach(request, new grpc.Metadata(), { deadline: Date.now() + deadlineMs }, (error) => (error ? reject(new Error(`Attach: ${error.message}`)) : resolve()));
    });
  } finally {
    client.close();
  }
}
