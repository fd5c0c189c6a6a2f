// The local cluster's pod sandbox ("pause") process: it holds a pod's namespaces open and does
// nothing else until it is told to stop. Images cannot be pulled here, so this is built from source
// and put into an image by toolchain/cluster/node-images.ts.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			return
		}
		// As PID 1 of a pod that shares its process namespace, it reaps orphans so none stays a zombie.
		for {
			var status syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
