package lint

import (
	"path"
	"strings"
)

// Module is the import path of Floe's Go module.
const Module = "github.com/floe-broker/floe"

// This file is the single place that says which packages are core. The rule
// itself is in docs/design.md ("The deterministic core"); the table below is its
// mechanical form. Change them together.

// coreRule marks one package, or a package and everything below it, as core.
type coreRule struct {
	dir     string // path relative to Module
	subtree bool   // also every package below dir
	// exemptFiles are base-name globs (path.Match) of files that talk to
	// the real world on the core's behalf and so may break the rule.
	exemptFiles []string
}

// coreRules lists the core packages.
//
//   - consensus/...: sans-IO Raft.
//   - logstore: the log logic; osfs*.go is the real, os-backed FS.
//   - clock: real.go is the one file that reads the OS clock.
//   - node/...: the reactor and the state machines, minus runtimeDirs.
var coreRules = []coreRule{
	{dir: "consensus", subtree: true},
	{dir: "logstore", exemptFiles: []string{"osfs*.go"}},
	{dir: "clock", exemptFiles: []string{"real.go"}},
	{dir: "node", subtree: true},
}

// runtimeDirs are packages (with their subpackages) under a core subtree that
// are runtime, not core: they own sockets, goroutines and the OS on the core's
// behalf.
var runtimeDirs = []string{
	"node/kafka",   // Kafka protocol server: connections, goroutines
	"node/runtime", // production reactor loop, fsync worker, ticker
	"node/admin",   // admin HTTP API
}

// isCore reports whether the package with import path pkgPath is core, and
// if so which file globs in it are exempt. extra holds additional patterns
// (from the -core flag): an exact import path, or a path ending in "/..."
// for a subtree.
func isCore(pkgPath string, extra []string) (core bool, exemptFiles []string) {
	if strings.HasSuffix(pkgPath, ".test") {
		return false, nil // a generated test main (go vet -test), not our code
	}
	for _, p := range extra {
		if matchPattern(p, pkgPath) {
			return true, nil
		}
	}
	rel, ok := strings.CutPrefix(pkgPath, Module+"/")
	if !ok {
		return false, nil
	}
	for _, d := range runtimeDirs {
		if within(rel, d) {
			return false, nil
		}
	}
	for _, r := range coreRules {
		if rel == r.dir || (r.subtree && within(rel, r.dir)) {
			return true, r.exemptFiles
		}
	}
	return false, nil
}

// within reports whether rel is dir or below it.
func within(rel, dir string) bool {
	return rel == dir || strings.HasPrefix(rel, dir+"/")
}

// matchPattern matches an import path against "a/b" or "a/b/...".
func matchPattern(pattern, pkgPath string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return within(pkgPath, dir)
	}
	return pattern == pkgPath
}

// fileExempt reports whether a file of a core package is outside the rule:
// test files always are, and so are files the go command generated outside
// the source tree (no .go suffix, as cgo and test mains in the build cache),
// and the package's exempt globs.
func fileExempt(filename string, exemptFiles []string) bool {
	base := path.Base(strings.ReplaceAll(filename, "\\", "/"))
	if strings.HasSuffix(base, "_test.go") || !strings.HasSuffix(base, ".go") {
		return true
	}
	for _, g := range exemptFiles {
		if ok, _ := path.Match(g, base); ok {
			return true
		}
	}
	return false
}
