// pulumi-resource-kubernetes for egress's Kubernetes tests: upstream's cmd/pulumi-resource-kubernetes main,
// whose embedded schema files upstream makes with `go generate`; here genembed writes them from the
// schema.json / terraform-mapping.json shipped inside the module (scripts/build-k8s.sh runs it first).
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
