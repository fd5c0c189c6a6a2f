# The operator image:  docker build -t appstack:0.1.0 .
# The base images are build arguments whose defaults are the public ones; `npx appstack image`
# builds this same file with buildah on base images it makes locally (docs/development/images.md).
ARG GO_IMAGE=golang:1.26-bookworm
ARG NODE_IMAGE=node:24-bookworm-slim
ARG DEBIAN_IMAGE=debian:bookworm-slim
# Stage 1 builds the pinned Pulumi CLI and Kubernetes provider from the Go modules in toolchain/,
# as `npm run toolchain` does; stage 2 installs the production dependencies; the image is Debian
# with Node.js, those dependencies, the two binaries and the operator's sources, which it runs as
# they are (type stripping: tsconfig.json allows only erasable TypeScript syntax, so nothing is built).
FROM ${GO_IMAGE} AS toolchain
WORKDIR /src
# Only what the two builds read, so that a change elsewhere in toolchain/ does not rebuild them.
COPY package.json package-lock.json ./
COPY toolchain/patch-module/ toolchain/patch-module/
COPY toolchain/pulumi/ toolchain/pulumi/
COPY toolchain/kubernetes-provider/ toolchain/kubernetes-provider/
ENV GOTOOLCHAIN=local GOFLAGS=-mod=readonly
# Each binary is built from a patched copy of its pinned module, as toolchain/build.ts builds it:
# toolchain/patch-module applies the tool's patches/*.patch (docs/development/toolchain.md) and writes a go.mod
# that replaces the module with the copy. The copies go under PATCHED_MODULES, which
# `npx appstack image` sets to the host's folder of them, so that the Go build cache the build
# mounts from the host (keyed by a package's folder too) serves them.
ARG PATCHED_MODULES=/patched-modules
RUN go -C toolchain/patch-module run . -module github.com/pulumi/pulumi/pkg/v3 -into "$PATCHED_MODULES" -modfile /tmp/pulumi.mod ../pulumi \
 && cd toolchain/pulumi \
 && go build -modfile /tmp/pulumi.mod -o /out/pulumi -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$(go list -m -f '{{.Version}}' github.com/pulumi/pulumi/pkg/v3)" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
# Without cgo: kustomize imports Go's `plugin` package, and a cgo binary that links it exports every
# symbol for plugins to find (89 MB of dynamic symbol table in the 309 MB provider) and keeps code
# the linker would otherwise drop. The provider loads no Go plugins. Its main package embeds the
# schema files that upstream's build generates, copied from the pinned module.
RUN go -C toolchain/patch-module run . -module github.com/pulumi/pulumi-kubernetes/provider/v4 -into "$PATCHED_MODULES" -modfile /tmp/provider.mod ../kubernetes-provider \
 && cd toolchain/kubernetes-provider \
 && dir=$(go list -m -f '{{.Dir}}' github.com/pulumi/pulumi-kubernetes/provider/v4) \
 && version=$(grep -A1 '"node_modules/@pulumi/kubernetes": {' /src/package-lock.json | sed -n 's/.*"version": "\([^"]*\)".*/\1/p') \
 && cp "$dir/cmd/pulumi-resource-kubernetes/schema.json" schema-embed.json \
 && cp "$dir/cmd/pulumi-resource-kubernetes/terraform-mapping.json" terraform-mapping-embed.json \
 && CGO_ENABLED=0 go build -modfile /tmp/provider.mod -o /out/pulumi-resource-kubernetes -ldflags "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$version" .

# The production dependencies, less what only a compiler or a debugger reads: TypeScript
# declarations (the @types packages among them) and source maps, half their size.
FROM ${NODE_IMAGE} AS modules
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts \
 && rm -rf node_modules/@types \
 && find node_modules -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -delete

# Debian with Node.js's one binary: no npm, which nothing runs here.
FROM ${DEBIAN_IMAGE}
# An init as PID 1 that reaps: the plugins of an engine the operator kills (past a deadline, at a
# handover) are orphans, and node as PID 1 would never reap them once they are killed too.
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
# A passwd entry (and a home) for 65532: the pulumi CLI looks its user up by uid when it creates a
# stack, and without one fails with "user: unknown userid 65532" (seen in the first in-cluster run).
RUN groupadd --system --gid 65532 appstack \
 && useradd --system --uid 65532 --gid 65532 --home-dir /home/appstack --create-home --shell /usr/sbin/nologin appstack
COPY --from=modules /usr/local/bin/node /usr/local/bin/node
# The operator finds the pinned binaries on PATH; nothing is downloaded at run time.
COPY --from=toolchain /out/ /usr/local/bin/
WORKDIR /app
COPY --from=modules /app/node_modules/ node_modules/
# Only what runs: the operator and what its entry point imports (operator/cmd/main.ts reaches
# components/, crds/ and toolchain/tools.ts, which finds the binaries). .dockerignore keeps
# everything else out of the build's context as well.
COPY package.json ./
COPY crds/ crds/
COPY components/ components/
COPY toolchain/tools.ts toolchain/
COPY operator/ operator/
ENV PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true \
    APPSTACK_CACHE_DIR=/nonexistent \
    NODE_ENV=production
USER 65532:65532
# The build's version, reported as appstack_build_info{version} (empty: package.json's). Last, so
# that builds which differ only in it share every other layer. The RUN is for buildah (1.28), whose
# layer cache knows an ENV by its text only: a build of another version got the last build's image.
# A RUN's cache key holds the build arguments' values.
ARG APPSTACK_VERSION=
RUN : "appstack ${APPSTACK_VERSION}"
ENV APPSTACK_VERSION=${APPSTACK_VERSION}
ENTRYPOINT ["/usr/bin/tini", "--", "node", "operator/cmd/main.ts"]
