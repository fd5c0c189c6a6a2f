// CoreDNS for the local real node's cluster DNS, with only the plugins its Corefile names
// (toolchain/cluster/node-dns.ts). Upstream's main imports every plugin (core/plugin), with the
// cloud providers' SDKs; naming these seven keeps the build to what runs.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() { coremain.Run() }
