// The OpenAPI data a kept provider's connections share (../schemas.go keeps it). Upstream's
// Configure fetches the API server's whole OpenAPI document and parses it (getResources), once
// per provider, which was once per operation: about a fifth of the provider's CPU, and the API
// server's gzip of the document each time. getResources returns what the provider holds, so a
// provider given the data before Configure uses it without a fetch.
package provider

import (
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	k8sopenapi "k8s.io/kubectl/pkg/util/openapi"
)

// AppstackSchema is the OpenAPI data the provider holds: nil before Configure, after a failed
// fetch, or after a CRD it created made it drop the data.
func AppstackSchema(server pulumirpc.ResourceProviderServer) k8sopenapi.Resources {
	k, ok := server.(*kubeProvider)
	if !ok {
		return nil
	}
	k.resourcesMutex.RLock()
	defer k.resourcesMutex.RUnlock()
	return k.resources
}

// AppstackUseSchema gives a provider, before its Configure, OpenAPI data parsed for the same connection.
func AppstackUseSchema(server pulumirpc.ResourceProviderServer, resources k8sopenapi.Resources) {
	k, ok := server.(*kubeProvider)
	if !ok {
		return
	}
	k.resourcesMutex.Lock()
	defer k.resourcesMutex.Unlock()
	k.resources = resources
}
