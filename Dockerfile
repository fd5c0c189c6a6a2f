# The operator image:  docker build -t appstack:0.1.0 .
# The base images are build arguments whose defaults are the public ones; `npx appstack image`
# builds this same file with buildah on base images it makes locally (docs/running-in-the-cluster.md).
ARG GO_IMAGE=golang:1.26-bookworm
ARG NODE_IMAGE=node:24-bookworm-slim
# Stage 1 builds the pinned Pulumi CLI and Kubernetes provider from the Go modules in toolchain/,
# exactly as `npm run toolchain` does; stage 2 is Node with the sources, which it runs as they are
# (type stripping: tsconfig.json allows only erasable TypeScript syntax, so nothing is built).
FROM ${GO_IMAGE} AS toolchain
WORKDIR /src
# Only what the two builds read, so that a change elsewhere in toolchain/ does not rebuild them.
COPY package.json package-lock.json ./
COPY toolchain/pulumi/ toolchain/pulumi/
COPY toolchain/kubernetes-provider/ toolchain/kubernetes-provider/
ENV GOTOOLCHAIN=local GOFLAGS=-mod=readonly
RUN cd toolchain/pulumi \
 && go build -o /out/pulumi -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$(go list -m -f '{{.Version}}' github.com/pulumi/pulumi/pkg/v3)" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
RUN cd toolchain/kubernetes-provider \
 && dir=$(go list -m -f '{{.Dir}}' github.com/pulumi/pulumi-kubernetes/provider/v4) \
 && version=$(grep -A1 '"node_modules/@pulumi/kubernetes": {' /src/package-lock.json | sed -n 's/.*"version": "\([^"]*\)".*/\1/p') \
 && cp "$dir/cmd/pulumi-resource-kubernetes/schema.json" schema-embed.json \
 && cp "$dir/cmd/pulumi-resource-kubernetes/terraform-mapping.json" terraform-mapping-embed.json \
 && go build -o /out/pulumi-resource-kubernetes -ldflags "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$version" .

FROM ${NODE_IMAGE}
# An init as PID 1 that reaps: the plugins of an engine the operator kills (past a deadline, at a
# handover) are orphans, and node as PID 1 would never reap them once they are killed too.
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts && npm cache clean --force
COPY . .
COPY --from=toolchain /out/ /usr/local/bin/
# A passwd entry (and a home) for 65532: the pulumi CLI looks its user up by uid when it creates a
# stack, and without one fails with "user: unknown userid 65532" (seen in the first in-cluster run).
RUN groupadd --system --gid 65532 appstack \
 && useradd --system --uid 65532 --gid 65532 --home-dir /home/appstack --create-home --shell /usr/sbin/nologin appstack
# The operator finds the pinned binaries on PATH; nothing is downloaded at run time.
ENV PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true \
    APPSTACK_CACHE_DIR=/nonexistent \
    NODE_ENV=production
USER 65532:65532
# The build's version, reported as appstack_build_info{version} (empty: package.json's). Last, so
# that builds which differ only in it share every other layer.
ARG APPSTACK_VERSION=
ENV APPSTACK_VERSION=${APPSTACK_VERSION}
ENTRYPOINT ["/usr/bin/tini", "--", "node", "operator/cmd/main.ts"]
