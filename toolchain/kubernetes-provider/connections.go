package main

// A provider per engine connection. An engine that attaches dials the port once per provider it
// loads, and gives each its own connection; upstream's Attach only swaps the engine address of
// the one provider, which is enough for a debugger but would share one provider's configuration,
// caches and cancellation among every stack a slot serves. Here each connection that attaches
// gets a new provider, made as Serve makes one, and loses it when the connection ends: what a
// plugin process per provider gave, without the process.

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/host"
	"github.com/pulumi/pulumi/pkg/v3/resource/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

type attached struct {
	provider pulumirpc.ResourceProviderServer
	engine   *provider.HostClient
}

// end cancels what the provider still runs (its informers, any request) and closes its line to the engine.
func (a attached) end() {
	_, _ = a.provider.Cancel(context.Background(), &emptypb.Empty{})
	_ = a.engine.Close()
}

type connections struct {
	pulumirpc.UnimplementedResourceProviderServer
	newProvider func(host.HostClient) (pulumirpc.ResourceProviderServer, error)

	schemas *schemaCache

	mu      sync.Mutex
	byPeer  map[string]attached
	release *time.Timer
}

func newConnections(newProvider func(host.HostClient) (pulumirpc.ResourceProviderServer, error)) *connections {
	return &connections{newProvider: newProvider, schemas: newSchemaCache(), byPeer: map[string]attached{}}
}

type peerKey struct{}

func peerOf(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// Attach gives the calling connection a new provider that reports to the engine at req.Address.
func (c *connections) Attach(ctx context.Context, req *pulumirpc.PluginAttach) (*emptypb.Empty, error) {
	key := peerOf(ctx)
	if key == "" {
		return nil, status.Error(codes.FailedPrecondition, "attach: the caller's address is unknown")
	}
	engine, err := provider.NewHostClient(req.GetAddress())
	if err != nil {
		return nil, err
	}
	fresh, err := c.newProvider(engine)
	if err != nil {
		_ = engine.Close()
		return nil, err
	}
	c.mu.Lock()
	previous, had := c.byPeer[key]
	c.byPeer[key] = attached{provider: fresh, engine: engine}
	c.mu.Unlock()
	if had {
		previous.end()
	}
	return &emptypb.Empty{}, nil
}

func (c *connections) of(ctx context.Context) (pulumirpc.ResourceProviderServer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.byPeer[peerOf(ctx)]; ok {
		return a.provider, nil
	}
	return nil, status.Error(codes.FailedPrecondition, "no engine has attached on this connection")
}

// TagConn keeps the connection's remote address for HandleConn, which does not get the peer.
func (c *connections) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, peerKey{}, info.RemoteAddr.String())
}

// HandleConn ends the provider of a connection that ended, whether its engine finished or died.
func (c *connections) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, ended := s.(*stats.ConnEnd); !ended {
		return
	}
	key, _ := ctx.Value(peerKey{}).(string)
	c.mu.Lock()
	a, ok := c.byPeer[key]
	delete(c.byPeer, key)
	idle := len(c.byPeer) == 0
	c.mu.Unlock()
	if ok {
		a.end()
	}
	if ok && idle {
		c.releaseWhenIdle()
	}
}

// idleRelease is how long the process waits, with no engine attached, before it returns its heap.
const idleRelease = 2 * time.Second

// releaseWhenIdle returns the heap to the system once no engine has attached for idleRelease. An
// operation's provider parses the API server's whole OpenAPI document: a process that then waits
// for the next engine would keep that heap (over 100 MiB) until Go's own collection and
// scavenger get to it, minutes later. Not at once: in a burst the next engine comes within
// milliseconds, and memory handed back would be faulted in again by its provider.
func (c *connections) releaseWhenIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.release != nil {
		c.release.Stop()
	}
	c.release = time.AfterFunc(idleRelease, func() {
		c.mu.Lock()
		idle := len(c.byPeer) == 0
		c.mu.Unlock()
		if idle {
			c.schemas.clear()
			debug.FreeOSMemory()
		}
	})
}

func (c *connections) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (c *connections) HandleRPC(context.Context, stats.RPCStats)                       {}

// The calls of the provider protocol go to the provider of the connection they came on: every
// call the compiled protocol has (forward/), but Attach, which connections answers, and the calls
// intercepts.go adds to, which are its methods too.

// ownCalls are the calls connections answers itself or adds to.
var ownCalls = map[string]bool{"Attach": true, "Configure": true, "Create": true, "Update": true, "Delete": true}

// attachedProvider is the provider of the calling connection, or nil before its engine attaches.
func (c *connections) attachedProvider(ctx context.Context) pulumirpc.ResourceProviderServer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.byPeer[peerOf(ctx)]; ok {
		return a.provider
	}
	return nil
}

func toAttached[Req, Res any](c *connections, ctx context.Context, req Req, call func(pulumirpc.ResourceProviderServer, context.Context, Req) (Res, error)) (Res, error) {
	p, err := c.of(ctx)
	if err != nil {
		var none Res
		return none, err
	}
	return call(p, ctx, req)
}
