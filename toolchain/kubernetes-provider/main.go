// Command pulumi-resource-kubernetes is the Pulumi Kubernetes provider plugin, built from the
// pinned provider module. Upstream's own main package embeds schema files that are generated and
// git-ignored upstream, so it cannot be built from the module as published; this one embeds the
// same files, which the toolchain build copies in from the pinned module before compiling.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
