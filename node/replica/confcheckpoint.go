package replica

import (
	"fmt"
	"path"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/wire"
	"github.com/floe-broker/floe/logstore"
)

// The membership checkpoint: the group's membership as of the last
// configuration change this replica applied, kept durably beside its log.
//
// Raft here applies a configuration change when the entry is applied (as
// etcd raft does), and on a restart a replica rebuilds its membership from
// its snapshot point by applying committed entries again — but only up to
// the commit index it finds on disk, which may be far behind (the commit
// index is not synced with every change). A replica that was removed, or
// whose group gained members, would then come back believing an old
// membership: a removed member could campaign and, with another stale
// member's vote, win, and truncate entries the real membership had
// committed (the simulator found exactly this: acknowledged writes lost
// after a reassignment and a power cut). So every applied change is written
// here, durably, before the replica goes on; a restart starts Raft with
// this membership, and changes at or below its index are not applied to
// Raft a second time while the log is replayed.

// confFile is the checkpoint's file in the replica's directory.
const confFile = "membership"

const confCheckpointVersion = 1

// confCheckpoint is a membership and the index of the entry that made it.
type confCheckpoint struct {
	Index uint64
	Conf  consensus.ConfState
}

func encodeConfCheckpoint(c confCheckpoint) []byte {
	var w wire.Writer
	w.U8(confCheckpointVersion)
	w.Uvarint(c.Index)
	writeIDs(&w, c.Conf.Voters)
	writeIDs(&w, c.Conf.Learners)
	return w.B
}

func decodeConfCheckpoint(b []byte) (confCheckpoint, error) {
	r := wire.Reader{B: b}
	if v := r.U8(); v != confCheckpointVersion {
		return confCheckpoint{}, fmt.Errorf("replica: membership checkpoint version %d unknown", v)
	}
	c := confCheckpoint{Index: r.Uvarint()}
	c.Conf.Voters = readIDs(&r)
	c.Conf.Learners = readIDs(&r)
	if err := r.Done(); err != nil {
		return confCheckpoint{}, fmt.Errorf("replica: membership checkpoint: %w", err)
	}
	return c, nil
}

// readConfCheckpoint returns the checkpoint in dir, if there is one that
// parses. A failed read (an I/O error, not a missing file) is returned:
// the replica would otherwise start with the membership of its snapshot
// and commit index, which may be older than one it applied (the bug the
// checkpoint closes; the vote fence's failed read, node readFence, was
// the same hole: sim seed 953535 --all-faults).
func readConfCheckpoint(fs logstore.FS, dir string) (confCheckpoint, bool, error) {
	b, ok, err := logstore.ReadFileIfExists(fs, path.Join(dir, confFile))
	if err != nil {
		return confCheckpoint{}, false, fmt.Errorf("replica: membership checkpoint: %w", err)
	}
	if !ok {
		return confCheckpoint{}, false, nil
	}
	c, err := decodeConfCheckpoint(b)
	if err != nil {
		return confCheckpoint{}, false, nil
	}
	return c, true, nil
}

// writeConfCheckpoint makes c durable.
func writeConfCheckpoint(fs logstore.FS, dir string, c confCheckpoint) error {
	return logstore.WriteFileAtomic(fs, dir, confFile, encodeConfCheckpoint(c))
}
