// genembed writes schema-embed.json (the module's schema.json with "version" set) and
// terraform-mapping-embed.json (terraform-mapping.json compacted) into the current directory, as upstream's
// generate.go does. Usage: genembed <dir of cmd/pulumi-resource-kubernetes in the module cache> <version>
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if len(os.Args) != 3 {
		fail(fmt.Errorf("usage: genembed <upstream cmd dir> <version>"))
	}
	src, version := os.Args[1], os.Args[2]
	var schema map[string]any
	read(filepath.Join(src, "schema.json"), &schema)
	if schema["name"] != "kubernetes" {
		fail(fmt.Errorf("%s/schema.json is not the kubernetes schema (name %v)", src, schema["name"]))
	}
	schema["version"] = version
	write("schema-embed.json", schema)
	var mapping any
	read(filepath.Join(src, "terraform-mapping.json"), &mapping)
	write("terraform-mapping-embed.json", mapping)
}

func read(path string, into any) {
	b, err := os.ReadFile(path)
	if err != nil {
		fail(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		fail(fmt.Errorf("%s: %w", path, err))
	}
}

// write replaces the file atomically so a killed run never leaves half a schema to embed.
func write(path string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		fail(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "genembed:", err)
	os.Exit(1)
}
