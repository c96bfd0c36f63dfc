package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A profile path that cannot be created fails at once, before any seed
// runs, with the path in the error; a good one is written at the end.
func TestSimProfilePaths(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "missing", "heap.out")
	for _, flag := range []string{"--memprofile", "--cpuprofile"} {
		err := runSim([]string{"--seed", "1", flag, bad})
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Fatalf("%s %s: got %v, want an error naming the path", flag, bad, err)
		}
	}
	good := filepath.Join(t.TempDir(), "heap.out")
	stop, err := startProfiles(simFlags{memProfile: good})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	stop() // a second call (the signal handler's and the deferred one) is harmless
	if st, err := os.Stat(good); err != nil || st.Size() == 0 {
		t.Fatalf("heap profile %s: %v, size %v", good, err, st)
	}
}
