// Package docker holds the Docker suite's image definition: the Dockerfile
// (FROM scratch, the static floe binary only), embedded so the harness can
// build the image from any working directory.
package docker
