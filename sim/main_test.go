package sim

import (
	"os"
	"testing"
)

// TestMain runs the package's tests with the simulator's collector target
// (UseSimGC), as floe sim does.
func TestMain(m *testing.M) {
	UseSimGC()
	os.Exit(m.Run())
}
