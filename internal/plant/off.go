//go:build !floe_bugs

package plant

// Enabled reports whether the named bug is planted. Without the floe_bugs
// build tag no bug ever is.
func Enabled(name string) bool { return false }

// Available reports whether this build can plant bugs.
const Available = false
