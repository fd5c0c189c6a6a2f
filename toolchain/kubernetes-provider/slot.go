package main

// One engine slot's provider: a process that lives as long as the operator, which every engine
// of that slot attaches to in turn (PULUMI_DEBUG_PROVIDERS=kubernetes:<port>), instead of
// starting a plugin process per operation. What an engine finds is still a provider of its own:
// each engine connection gets a new provider when it attaches (connections.go), and the
// environment the provider reads in Configure (KUBECONFIG) is the operation's, set through
// standard input before the engine starts (control.go).

import (
	"fmt"
	"os"

	"google.golang.org/grpc"

	"appstack.dev/toolchain/kubernetes-provider/forward"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/host"
	kubeprovider "github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// serveSlot serves until standard input closes (the operator is gone) or the server fails. It
// prints the port first, as a plugin does, so that the operator reads it the same way.
func serveSlot() error {
	logging.InitLogging(false, 0, false)
	perConnection := newConnections(func(engine host.HostClient) (pulumirpc.ResourceProviderServer, error) {
		return kubeprovider.NewAppstackAttached(engine, "kubernetes", version.Version, pulumiSchema, terraformMapping)
	})
	unary, stream := forward.Interceptors(perConnection.attachedProvider, ownCalls)
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterResourceProviderServer(srv, perConnection)
			return nil
		},
		Options: append(rpcutil.OpenTracingServerInterceptorOptions(nil), grpc.StatsHandler(perConnection),
			grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)),
	})
	if err != nil {
		return fmt.Errorf("fatal: %w", err)
	}
	fmt.Printf("%d\n", handle.Port)
	go followControl(os.Stdin, os.Stdout, func() { os.Exit(0) })
	if err := <-handle.Done; err != nil {
		return fmt.Errorf("fatal: %w", err)
	}
	return nil
}
