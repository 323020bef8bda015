// etcd for egress's Kubernetes tests (scripts/k8s-cluster.sh): the upstream server's entry point, built
// from the Go module proxy because no etcd release binary can be downloaded here.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
