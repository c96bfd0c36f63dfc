// Package lint holds Floe's own static checks, run by `make lint` through
// cmd/floelint.
//
// Determinism is the one analyzer today. It enforces docs/design.md's rule that the
// deterministic core never touches the world directly: in a core package it
// reports wall-clock reads and timers, `go` and `select` statements, channel
// operations, the global math/rand source, imports of crypto/rand, os, net
// (net/netip only parses addresses and is allowed) and syscall, and ranging over a map (whose order is random) unless the loop is
// marked `//floe:unordered <reason>`.
//
// Which packages are core, and which files inside them are exempt, is decided
// in one place: core.go. Test files (_test.go) are never checked.
//
// What it must not do: lint imports no Floe package, so it builds and tests on
// its own while the rest of the tree is mid-change.
package lint
