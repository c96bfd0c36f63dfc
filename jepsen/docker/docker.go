package docker

import _ "embed"

// Dockerfile is jepsen/docker/Dockerfile. Its build context holds one
// file, "floe": the statically linked binary, installed as /broker.
//
//go:embed Dockerfile
var Dockerfile []byte
