package main

// The OpenAPI data a slot's providers share. Each engine connection gets a new provider
// (connections.go), and upstream's Configure fetches and parses the API server's whole OpenAPI
// document for each: in a burst of operations, the same document every few hundred milliseconds.
// A provider configured for the same API server as one before it (documentKey: whichever identity
// it connects as) starts with that one's parsed data instead
// (patches/0002-share-openapi-schema.patch). The data is dropped after schemaLifetime, and
// whenever the slot goes idle (connections.go), so a CRD or an upgrade of the API server is seen
// within a minute, and an idle process holds no document.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	k8sopenapi "k8s.io/kubectl/pkg/util/openapi"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

const schemaLifetime = time.Minute

// schemaEntries bounds the documents a slot keeps: one per API server, and an operator talks to
// one; a few more cover a kubeconfig that names others, never one per tenant.
const schemaEntries = 2

type schemaEntry struct {
	resources k8sopenapi.Resources
	parsed    time.Time
}

type schemaCache struct {
	mu      sync.Mutex
	entries map[string]schemaEntry
}

func newSchemaCache() *schemaCache {
	return &schemaCache{entries: map[string]schemaEntry{}}
}

// get is the data parsed for `key` within schemaLifetime, or nil.
func (s *schemaCache) get(key string) k8sopenapi.Resources {
	if key == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	entry, ok := s.entries[key]
	if !ok || time.Since(entry.parsed) >= schemaLifetime {
		delete(s.entries, key)
		return nil
	}
	return entry.resources
}

func (s *schemaCache) put(key string, resources k8sopenapi.Resources) {
	if key == "" || resources == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.entries) >= schemaEntries {
		oldest := ""
		for k, entry := range s.entries {
			if oldest == "" || entry.parsed.Before(s.entries[oldest].parsed) {
				oldest = k
			}
		}
		delete(s.entries, oldest)
	}
	s.entries[key] = schemaEntry{resources: resources, parsed: time.Now()}
}

func (s *schemaCache) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.entries)
}

// documentKey names what the OpenAPI document depends on: the API server a provider's Configure
// connects to (its address, and the CA, server name, proxy and TLS setting it is reached with),
// not who connects. Every tenant identity has a kubeconfig of its own (the same server, another
// `as:` user or credential), and the document is the same for each: keyed by the kubeconfig's
// bytes, a burst over many tenants kept one parsed document (over 100 MiB) per tenant. "" when
// the server cannot be told: such a provider parses its own.
func documentKey(req *pulumirpc.ConfigureRequest) string {
	server, err := serverOf(req)
	if err != nil {
		return ""
	}
	digest := sha256.New()
	for _, part := range server {
		digest.Write([]byte(part))
		digest.Write([]byte{0})
	}
	return hex.EncodeToString(digest.Sum(nil))
}

// setting is a provider input as Configure reads it: an argument, else the old-style variable.
func setting(req *pulumirpc.ConfigureRequest, name string) string {
	if value, ok := req.GetArgs().GetFields()[name]; ok {
		return value.GetStringValue()
	}
	return req.GetVariables()["kubernetes:config:"+name]
}

// serverOf is the API server the provider's inputs and environment select, as client-go reads
// them: the `kubeconfig` input (a path or the text), else KUBECONFIG or ~/.kube/config, else the
// pod's in-cluster address; the `context` and `cluster` inputs override the current context's.
func serverOf(req *pulumirpc.ConfigureRequest) ([]string, error) {
	config, err := kubeconfigOf(setting(req, "kubeconfig"))
	if err != nil {
		return nil, err
	}
	if config == nil || (len(config.Clusters) == 0 && os.Getenv("KUBERNETES_SERVICE_HOST") != "") {
		ca, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/ca.crt")
		if err != nil {
			return nil, err
		}
		return []string{"in-cluster", os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"), string(ca)}, nil
	}
	contextName := setting(req, "context")
	if contextName == "" {
		contextName = config.CurrentContext
	}
	clusterName := setting(req, "cluster")
	if context, ok := config.Contexts[contextName]; ok && clusterName == "" {
		clusterName = context.Cluster
	}
	cluster, ok := config.Clusters[clusterName]
	if !ok {
		return nil, fmt.Errorf("no cluster %q", clusterName)
	}
	ca := cluster.CertificateAuthorityData
	if len(ca) == 0 && cluster.CertificateAuthority != "" {
		if ca, err = os.ReadFile(cluster.CertificateAuthority); err != nil {
			return nil, err
		}
	}
	return []string{"kubeconfig", cluster.Server, string(ca), cluster.TLSServerName, cluster.ProxyURL, fmt.Sprint(cluster.InsecureSkipTLSVerify)}, nil
}

// kubeconfigOf loads the kubeconfig the provider reads: the input (a file's path, or its text),
// else client-go's default rules (KUBECONFIG's files merged, or ~/.kube/config); nil for none.
func kubeconfigOf(input string) (*clientcmdapi.Config, error) {
	if input != "" {
		if _, err := os.Stat(input); err == nil {
			return clientcmd.LoadFromFile(input)
		}
		return clientcmd.Load([]byte(input))
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if len(rules.GetLoadingPrecedence()) == 0 {
		return nil, nil
	}
	config, err := rules.Load()
	if err != nil {
		return nil, err
	}
	if len(config.Clusters) == 0 {
		return nil, nil
	}
	return config, nil
}
