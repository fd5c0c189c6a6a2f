package main

// The calls a kept provider adds to on their way through. Configure: the OpenAPI data of an
// earlier provider of the same connection goes in before (schemas.go), and the Event informer
// of upstream's await is answered locally after (patches/0003-no-event-informer.patch). Create,
// Update and Delete of a CustomResourceDefinition: the shared data is dropped after the call, as
// upstream's provider drops its own, so that the next provider's Check sees the kinds as they are now.

import (
	"context"
	"strings"

	"google.golang.org/protobuf/types/known/emptypb"

	kubeprovider "github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

func (c *connections) Configure(ctx context.Context, req *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	p, err := c.of(ctx)
	if err != nil {
		return nil, err
	}
	key := documentKey(req)
	shared := c.schemas.get(key)
	if shared != nil {
		kubeprovider.AppstackUseSchema(p, shared)
	}
	res, err := p.Configure(ctx, req)
	if err != nil {
		return res, err
	}
	kubeprovider.AppstackWithoutEventInformer(p)
	if shared == nil {
		c.schemas.put(key, kubeprovider.AppstackSchema(p))
	}
	return res, nil
}

func (c *connections) Create(ctx context.Context, req *pulumirpc.CreateRequest) (*pulumirpc.CreateResponse, error) {
	defer c.dropSchemasFor(req.GetUrn())
	return toAttached(c, ctx, req, pulumirpc.ResourceProviderServer.Create)
}

func (c *connections) Update(ctx context.Context, req *pulumirpc.UpdateRequest) (*pulumirpc.UpdateResponse, error) {
	defer c.dropSchemasFor(req.GetUrn())
	return toAttached(c, ctx, req, pulumirpc.ResourceProviderServer.Update)
}

func (c *connections) Delete(ctx context.Context, req *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	defer c.dropSchemasFor(req.GetUrn())
	return toAttached(c, ctx, req, pulumirpc.ResourceProviderServer.Delete)
}

// dropSchemasFor drops the shared OpenAPI data after a call on a CustomResourceDefinition (its
// URN ends in its type, after any parent types, and its name: urn:pulumi:stack::project::parent$type::name).
func (c *connections) dropSchemasFor(urn string) {
	if strings.Contains(urn, "kubernetes:apiextensions.k8s.io/") && strings.Contains(urn, ":CustomResourceDefinition::") {
		c.schemas.clear()
	}
}
