// Package docker holds the Docker suite's image definition: the Dockerfile
// (FROM scratch, the static floe binary only), embedded so the harness can
// build the image from any working directory.
package docker

import _ "embed"

// Dockerfile is jepsen/docker/Dockerfile. Its build context holds one
// file, "floe": the statically linked binary, installed as /broker.
//
//go:embed Dockerfile
var Dockerfile []byte
