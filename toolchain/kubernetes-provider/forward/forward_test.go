package forward

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// registered answers nothing itself, as connections answers every call it does not list.
type registered struct {
	pulumirpc.UnimplementedResourceProviderServer
}

func (registered) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: "registered"}, nil
}

// provider implements calls that no list ever named.
type provider struct {
	pulumirpc.UnimplementedResourceProviderServer
}

func (provider) Handshake(_ context.Context, req *pulumirpc.ProviderHandshakeRequest) (*pulumirpc.ProviderHandshakeResponse, error) {
	return &pulumirpc.ProviderHandshakeResponse{AcceptSecrets: req.GetEngineAddress() == "engine:1"}, nil
}

func (provider) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: "attached"}, nil
}

func (provider) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	return nil, status.Error(codes.Aborted, "the provider's own error")
}

// serve runs the registered server behind the interceptors on loopback, with `attached` as every
// connection's provider (nil: none yet), and returns a client of it.
func serve(t *testing.T, attached pulumirpc.ResourceProviderServer, own map[string]bool) pulumirpc.ResourceProviderClient {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unary, stream := Interceptors(func(context.Context) pulumirpc.ResourceProviderServer { return attached }, own)
	server := grpc.NewServer(grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream))
	pulumirpc.RegisterResourceProviderServer(server, registered{})
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	conn, err := grpc.NewClient(listener.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return pulumirpc.NewResourceProviderClient(conn)
}

func TestEveryCallReachesTheAttachedProvider(t *testing.T) {
	client := serve(t, provider{}, map[string]bool{})
	res, err := client.Handshake(context.Background(), &pulumirpc.ProviderHandshakeRequest{EngineAddress: "engine:1"})
	if err != nil || !res.GetAcceptSecrets() {
		t.Fatalf("Handshake, a call no list named, did not reach the provider with its request: %v, %v", res, err)
	}
	info, err := client.GetPluginInfo(context.Background(), &emptypb.Empty{})
	if err != nil || info.GetVersion() != "attached" {
		t.Fatalf("GetPluginInfo: %v, %v", info, err)
	}
	if _, err := client.Cancel(context.Background(), &emptypb.Empty{}); status.Code(err) != codes.Aborted {
		t.Fatalf("the provider's error did not come back as it was: %v", err)
	}
}

func TestOwnCallsAndUnattachedConnectionsGetTheRegisteredServer(t *testing.T) {
	own := serve(t, provider{}, map[string]bool{"GetPluginInfo": true})
	if info, err := own.GetPluginInfo(context.Background(), &emptypb.Empty{}); err != nil || info.GetVersion() != "registered" {
		t.Fatalf("an own call went past the registered server: %v, %v", info, err)
	}
	unattached := serve(t, nil, map[string]bool{})
	if _, err := unattached.Handshake(context.Background(), &pulumirpc.ProviderHandshakeRequest{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("before an engine attaches, Handshake must be Unimplemented (the engine then attaches): %v", err)
	}
}
