// The Event list a kept provider does not make. Upstream's await (pkg/await: Creation, Update,
// Deletion) starts an informer on every Event of the object's namespace for each create, update
// and delete, to log the object's Warning Events while it waits, and it does so under
// `pulumi.com/skipAwait` too, where it does not wait. Each operation's provider is new
// (../connections.go), so each operation listed the whole namespace's Events again: a cost that
// grows with the namespace, so quadratic over a namespace's objects. appstack's children all
// carry skipAwait (components/metadata.ts), and the operator reads their state itself, so for a
// kept provider that informer gets an empty list and a watch that stays silent, without asking
// the API server. Everything else the provider asks of Events goes through.
package provider

import (
	"context"
	"errors"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// AppstackWithoutEventInformer makes a configured provider answer its Event informers locally.
// It does nothing to a provider without a cluster connection (Configure failed or yaml render mode).
func AppstackWithoutEventInformer(server pulumirpc.ResourceProviderServer) {
	k, ok := server.(*kubeProvider)
	if !ok || k.clientSet == nil || k.clientSet.GenericClient == nil {
		return
	}
	if _, done := k.clientSet.GenericClient.(withoutEventInformer); done {
		return
	}
	k.clientSet.GenericClient = withoutEventInformer{k.clientSet.GenericClient}
}

var eventsResource = corev1.SchemeGroupVersion.WithResource("events")

type withoutEventInformer struct{ dynamic.Interface }

func (c withoutEventInformer) Resource(resource schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	through := c.Interface.Resource(resource)
	if resource != eventsResource {
		return through
	}
	return unlistedEvents{through}
}

type unlistedEvents struct {
	dynamic.NamespaceableResourceInterface
}

func (e unlistedEvents) Namespace(namespace string) dynamic.ResourceInterface {
	return unlistedNamespaceEvents{e.NamespaceableResourceInterface.Namespace(namespace)}
}
func (unlistedEvents) List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return noEvents(), nil
}
func (unlistedEvents) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return silentWatch(opts)
}

type unlistedNamespaceEvents struct{ dynamic.ResourceInterface }

func (unlistedNamespaceEvents) List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return noEvents(), nil
}
func (unlistedNamespaceEvents) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return silentWatch(opts)
}

func noEvents() *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "EventList"}}
	list.SetResourceVersion("0")
	return list
}

// silentWatch never sends an event; the informer stops it. A streaming list (sendInitialEvents)
// is refused, so that a reflector that asked for one falls back to List.
func silentWatch(opts metav1.ListOptions) (watch.Interface, error) {
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		return nil, errors.New("appstack: a kept provider lists no Events")
	}
	return watch.NewFake(), nil
}
