//go:build floe_bugs

package plant

import "sync"

// Available reports whether this build can plant bugs.
const Available = true

var (
	mu      sync.RWMutex
	planted = map[string]bool{}
)

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
