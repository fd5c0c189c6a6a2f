// Package forward passes every call of the provider protocol to the provider a connection has,
// without a list of the calls written by hand: a call the compiled protocol has, and that the
// caller's connection has a provider for, goes to that provider's method of the same name. A
// list written by hand answered Unimplemented for any call a newer engine made that it lacked,
// though the provider module implemented it.
package forward

import (
	"context"
	"path"
	"reflect"

	"google.golang.org/grpc"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// Lookup is the provider of the connection a call came on, or nil when it has none yet.
type Lookup func(ctx context.Context) pulumirpc.ResourceProviderServer

// calls are the protocol's calls by name, as the compiled service describes them.
var calls = func() map[string]bool {
	names := map[string]bool{}
	for _, method := range pulumirpc.ResourceProvider_ServiceDesc.Methods {
		names[method.MethodName] = true
	}
	for _, stream := range pulumirpc.ResourceProvider_ServiceDesc.Streams {
		names[stream.StreamName] = true
	}
	return names
}()

var service = "/" + pulumirpc.ResourceProvider_ServiceDesc.ServiceName + "/"

// Interceptors forward each call to the provider `lookup` gives, but for the calls named in
// `own`, and for any call on a connection with no provider: those get the registered server's
// own method (before an engine attaches, its Handshake gets Unimplemented, which it takes as
// "no handshake").
func Interceptors(lookup Lookup, own map[string]bool) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	target := func(ctx context.Context, fullMethod string) (pulumirpc.ResourceProviderServer, string) {
		name := path.Base(fullMethod)
		if path.Dir(fullMethod)+"/" != service || own[name] || !calls[name] {
			return nil, name
		}
		return lookup(ctx), name
	}
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		provider, name := target(ctx, info.FullMethod)
		if provider == nil {
			return handler(ctx, req)
		}
		method := reflect.ValueOf(provider).MethodByName(name)
		if !method.IsValid() {
			return handler(ctx, req)
		}
		out := method.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(req)})
		err, _ := out[1].Interface().(error)
		return out[0].Interface(), err
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		// A streaming handler decodes the request itself, on whichever server it is given.
		if provider, _ := target(ss.Context(), info.FullMethod); provider != nil {
			return handler(provider, ss)
		}
		return handler(srv, ss)
	}
	return unary, stream
}
