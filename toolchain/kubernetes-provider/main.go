// Command pulumi-resource-kubernetes is the Pulumi Kubernetes provider plugin, built from the
// pinned provider module. Upstream's own main package embeds schema files that are generated and
// git-ignored upstream, so it cannot be built from the module as published; this one embeds the
// same files, which the toolchain build copies in from the pinned module before compiling.
//
// Started by an engine (its address as the one argument), it is upstream's plugin exactly. Started
// by the operator with APPSTACK_PROVIDER_SLOT set, it is one engine slot's long-lived provider,
// which that slot's engines attach to (slot.go).
package main

import (
	_ "embed"
	"os"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/cmdutil"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	if os.Getenv("APPSTACK_PROVIDER_SLOT") == "" {
		provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
		return
	}
	if err := serveSlot(); err != nil {
		cmdutil.ExitError(err.Error())
	}
}
