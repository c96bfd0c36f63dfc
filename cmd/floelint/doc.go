// Command floelint runs Floe's determinism lint (internal/lint) over the
// packages named on the command line:
//
//	go run ./cmd/floelint ./...
//
// It only reports in core packages (internal/lint/core.go lists them) and
// exits non-zero when it finds anything. -core adds packages to the core set.
package main
