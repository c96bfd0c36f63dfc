// Package segment is below logstore, which is core on its own (not as a
// subtree), so nothing here is reported.
package segment

func spawn() { go func() {}() }
