//go:build floe_bugs

package plant

import (
	"os"
	"strings"
	"sync"
)

// Available reports whether this build can plant bugs.
const Available = true

var (
	mu      sync.RWMutex
	planted = map[string]bool{}
)

// A binary built with floe_bugs plants the bugs named in FLOE_PLANT
// (comma-separated) at start, so the Docker suite can run a planted build.
func init() {
	for _, name := range strings.Split(os.Getenv("FLOE_PLANT"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			planted[name] = true
		}
	}
}

// Enabled reports whether the named bug is planted.
func Enabled(name string) bool {
	mu.RLock()
	defer mu.RUnlock()
	return planted[name]
}

// Set plants the named bug.
func Set(name string) {
	mu.Lock()
	defer mu.Unlock()
	planted[name] = true
}

// Reset removes every planted bug.
func Reset() {
	mu.Lock()
	defer mu.Unlock()
	planted = map[string]bool{}
}
