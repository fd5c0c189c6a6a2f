// appstack's additions to the pinned provider package, compiled into a build-time copy of the
// module (toolchain/build.ts prepareKubernetesProvider; the Dockerfile does the same) and never
// committed as upstream source. This one: the package's own constructor under an exported name.
// A kept slot provider (../connections.go) makes a new provider for every engine that attaches,
// so that nothing one stack's engine configured (Configure's flags are set, never reset) or
// cancelled (Cancel ends a provider's context for good) reaches the next; upstream exports no
// constructor, only Serve.
package provider

import "github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/host"

import pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

// NewAppstackAttached is makeKubeProvider: a provider as Serve makes one, talking to `engine`.
func NewAppstackAttached(engine host.HostClient, name, version string, pulumiSchema, terraformMapping []byte) (pulumirpc.ResourceProviderServer, error) {
	return makeKubeProvider(engine, name, version, pulumiSchema, terraformMapping)
}
