package main

// The OpenAPI data a slot's providers share. Each engine connection gets a new provider
// (connections.go), and upstream's Configure fetches and parses the API server's whole OpenAPI
// document for each: in a burst of operations, the same document every few hundred milliseconds.
// A provider configured for the same connection as one before it (the same provider inputs, the
// same kubeconfig, read byte for byte) starts with that one's parsed data instead
// (_overlay/shared_schema.go). The data is dropped after schemaLifetime, and whenever the slot
// goes idle (connections.go), so a CRD or an upgrade of the API server is seen within a minute,
// and an idle process holds no document.

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	k8sopenapi "k8s.io/kubectl/pkg/util/openapi"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

const schemaLifetime = time.Minute

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
	s.entries[key] = schemaEntry{resources: resources, parsed: time.Now()}
}

func (s *schemaCache) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.entries)
}

// connectionKey names what a provider's Configure connects with: its inputs and the environment
// it reads them from (the kubeconfig files' contents, or the pod's in-cluster address). "" when
// a kubeconfig file cannot be read: such a provider parses its own.
func connectionKey(req *pulumirpc.ConfigureRequest) string {
	digest := sha256.New()
	args, err := proto.MarshalOptions{Deterministic: true}.Marshal(req.GetArgs())
	if err != nil {
		return ""
	}
	write := func(parts ...string) {
		for _, part := range parts {
			digest.Write([]byte(part))
			digest.Write([]byte{0})
		}
	}
	write(string(args))
	names := make([]string, 0, len(req.GetVariables()))
	for name := range req.GetVariables() {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		write(name, req.GetVariables()[name])
	}
	write(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"), os.Getenv("KUBECONFIG"))
	files := filepath.SplitList(os.Getenv("KUBECONFIG"))
	if len(files) == 0 {
		// client-go's default; absent in a pod, which the in-cluster address above names.
		if home, err := os.UserHomeDir(); err == nil {
			if _, err := os.Stat(filepath.Join(home, ".kube", "config")); err == nil {
				files = []string{filepath.Join(home, ".kube", "config")}
			}
		}
	}
	for _, file := range files {
		content, err := os.ReadFile(file)
		if err != nil {
			return ""
		}
		write(string(content))
	}
	return hex.EncodeToString(digest.Sum(nil))
}
