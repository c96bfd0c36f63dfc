package runtime

import (
	"path/filepath"
	"syscall"
)

// diskSpace is node.Env.DiskSpace for a data directory: its absolute path
// and its filesystem's size and the space an unprivileged writer may still
// use (statfs: blocks and available blocks times the block size). One
// statfs call, a few microseconds, so the reactor may make it.
func diskSpace(dataDir string) func() (string, int64, int64, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	return func() (string, int64, int64, error) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(abs, &st); err != nil {
			return abs, -1, -1, err
		}
		bs := int64(st.Bsize)
		return abs, int64(st.Blocks) * bs, int64(st.Bavail) * bs, nil
	}
}
