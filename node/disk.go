package node

import (
	"errors"
	"fmt"
	"path"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/plant"
	"github.com/floe-broker/floe/logstore"
)

// Disk identity: fencing a broker whose disk was replaced.
//
// A broker restarted on an empty data directory under its old id is, for
// every Raft group it was a voter of, a member that forgot its log, its
// term and its vote. Voting like a new member, it could elect a candidate
// lacking entries it had acknowledged and so lose committed data
// (consensus/fence.go; Alagappan et al., FAST'18; KIP-853's directory id).
//
// Each data directory gets a random disk id when it is formatted (the file
// disk.id, from the reactor's seeded randomness). The broker registers it
// with the controller, which records the last disk id of every broker
// (controller.Broker.DiskID, in the replicated metadata and its snapshots).
// A registration that brings a different disk id than the recorded one
// marks the broker replaced: the controller records FenceBelow, its next
// partition group id, so every group that existed then (group ids only
// grow) may have had this broker as a voter on its old disk.
//
// On this broker, a replica of a group below FenceBelow that it opens with
// nothing on disk (no log, no hard state, no tombstone) starts with the
// lost-log fence, made durable first: it neither votes nor campaigns until
// a leader told it its log end and it has caught up to it. Groups created
// after the replacement start unfenced: all their replicas are new, which
// is a bootstrap, not a loss. While the metadata this broker has applied
// still shows another disk id for it (its registration is not applied
// yet), it opens no replica with nothing on disk: it cannot yet tell which
// groups predate it. A replica with no peer (one replica) is not fenced:
// nobody could lift the fence, and its data is gone either way.
//
// The controller group is covered the same way, without the controller's
// help: a start that finds no disk id and no controller log (only, at
// most, the fence a failed earlier start left: noControllerLog) writes the
// controller replica's lost-log fence durably before the disk id
// (fenceNewController), so the next start never takes a half-formatted
// directory for a formatted one (docs/architecture.md).

// diskIDFile holds the data directory's disk id.
const diskIDFile = "disk.id"

// loadDiskID reads the data directory's disk id, or makes one (a new
// directory, or one from before disk ids) and makes it durable.
func (r *Reactor) loadDiskID() error {
	name := path.Join(r.cfg.DataDir, diskIDFile)
	b, err := logstore.ReadWholeFile(r.env.FS, name)
	switch {
	case err == nil && validDiskID(string(b)):
		r.diskID = string(b)
		return nil
	case err == nil:
		// Damaged: a new id. The controller then takes this disk for a
		// replacement, which only fences replicas opened new from now on.
		r.env.Logf("node %d: %s holds %q, not a disk id: making a new one", r.self, name, b)
	case !errors.Is(err, logstore.ErrNotExist):
		return fmt.Errorf("node: disk id: %w", err)
	}
	if r.noControllerLog() {
		r.freshDisk = true // no controller log either: a new data directory
		// The controller's lost-log fence is durable before the disk
		// id: a start that fails between the two (a read fault opening
		// the controller log) must not leave a directory that the next
		// start takes for a formatted one with an unfenced controller
		// replica, which would vote, with its term and vote forgotten,
		// in a term it voted in on its old disk (sim seed 14 of
		// TestReplacedVoterUnderHeavyReadFaults: two controller leaders
		// in term 3).
		if err := r.fenceNewController(); err != nil {
			return err
		}
	}
	id := fmt.Sprintf("%016x%016x", r.env.Rand.Uint64(), r.env.Rand.Uint64())
	if err := logstore.WriteFileAtomic(r.env.FS, r.cfg.DataDir, diskIDFile, []byte(id)); err != nil {
		return fmt.Errorf("node: disk id: %w", err)
	}
	r.diskID = id
	r.env.Logf("node %d: data directory formatted with disk id %s", r.self, id)
	return nil
}

// noControllerLog reports whether the controller's directory holds no
// log: it does not exist (or cannot be listed), or it holds only what
// fenceNewController writes there. A start that formats the data
// directory creates the controller's directory first, then writes the
// fence in it, then the disk id; a start that fails in between (a full
// disk: sim seed 1020498 with --all-faults, the fence's temporary file
// could not be created) leaves the directory with no fence, or with the
// fence's temporary file only. The next start must still take the data
// directory for a new one and write the fence: taking "the directory
// exists" for "a log exists" formatted it with an unfenced controller
// replica, which, its term and vote forgotten, voted again in a term it
// had voted in on its old disk (two controller leaders in term 4). So
// "new" is derived again on every start until the disk id is durable,
// and the fence is durable before it.
func (r *Reactor) noControllerLog() bool {
	names, err := r.env.FS.List(r.controllerDir())
	if err != nil {
		return true
	}
	for _, n := range names {
		if n != fenceFile && n != fenceFile+".tmp" {
			return false
		}
	}
	return true
}

func validDiskID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// DiskID returns this broker's disk id.
func (r *Reactor) DiskID() string { return r.diskID }

// diskPending reports whether the metadata applied here records another
// disk id for this broker: it was replaced and its registration is not
// applied yet.
func (r *Reactor) diskPending() bool {
	b, ok := r.ctl.state.Brokers[int32(r.self)]
	return ok && b.DiskID != "" && b.DiskID != r.diskID
}

// lostOnOldDisk reports whether group g may have had this broker as a
// voter on a disk it no longer has.
func (r *Reactor) lostOnOldDisk(g uint64) bool {
	if plant.Enabled(plant.LostDiskFenceOff) {
		return false
	}
	b, ok := r.ctl.state.Brokers[int32(r.self)]
	if !ok || b.DiskID == "" {
		return false
	}
	return b.DiskID != r.diskID || g < b.FenceBelow
}

// isNewLog reports whether log holds nothing at all: no entry, snapshot or
// hard state.
func isNewLog(log *logstore.Log) bool {
	return log.LastIndex() == 0 && log.Snapshot().Index == 0 && log.HardState() == (logstore.HardState{})
}

// fenceLostDisk makes the lost-log fence of group g's new replica durable
// in dir when the group may have had this broker as a voter on its old
// disk; fenceOnOpen then reads it back.
func (r *Reactor) fenceLostDisk(g uint64, name, dir string, log *logstore.Log, peers bool) error {
	if !peers || !isNewLog(log) || !r.lostOnOldDisk(g) {
		return nil
	}
	if err := writeFence(r.env.FS, dir, consensus.LostLog()); err != nil {
		return fmt.Errorf("node: fence %s: %w", name, err)
	}
	r.env.Logf("node %d: %s: this broker's disk was replaced (disk id %s); the replica neither votes nor campaigns until it has caught up with a leader",
		r.self, name, r.diskID)
	return nil
}

// fenceNewController makes the lost-log fence of the controller replica
// durable when this start formats the data directory, before the disk id
// (loadDiskID): nothing here tells a new cluster from a broker whose disk
// was replaced, so every new controller replica with peers starts fenced.
// An initial voter may take part in the group's first election
// (Config.LostLogBootstrapTerm: it votes for, and campaigns with, a log of
// bootstrap entries only) once its term probe found the group new: a
// majority of the voters, itself included, whose logs hold the bootstrap
// entries only. So a new cluster elects, even with a voter down; a
// replaced voter hears from a voter whose log went past bootstrap, loses
// the exception, and votes for nobody until it has caught up with a
// leader (consensus/fence.go). The fence file waits in the controller's
// directory for the log's first open (openController, fenceOnOpen), which
// finds the fence, and only it, in a directory that holds no log yet.
func (r *Reactor) fenceNewController() error {
	if !r.freshDisk || !r.controllerPeers() || plant.Enabled(plant.LostDiskFenceOff) {
		return nil
	}
	dir := r.controllerDir()
	if err := r.env.FS.MkdirAll(dir); err != nil {
		return fmt.Errorf("node: fence the controller: %w", err)
	}
	// The new directories are durable only once their parents are
	// synced, up to the root (as logstore's Open does for a log's
	// directory it creates, which now finds this one in place).
	for d := dir; d != "" && d != "." && d != "/"; {
		d = path.Dir(d)
		if d == "." {
			d = ""
		}
		if err := r.env.FS.SyncDir(d); err != nil {
			return fmt.Errorf("node: fence the controller: %w", err)
		}
	}
	if err := writeFence(r.env.FS, dir, consensus.LostLog()); err != nil {
		return fmt.Errorf("node: fence the controller: %w", err)
	}
	return nil
}

// controllerPeers reports whether the controller group has members other
// than this broker (a single-node cluster has nobody to get lost entries
// back from).
func (r *Reactor) controllerPeers() bool { return len(r.cfg.Peers) > 1 || r.cfg.Join != "" }

// leaderLogFence replaces a durable lost-log fence of group g, or one of
// the member's term that the leader of that term's log end is below
// (consensus/fence.go sameTermLeaderLog), with the fence it became in
// Raft (the leader's log end), so that the durable record can go once the
// durable log lifts it. It reports whether the durable fence is still the
// one it was.
func (r *Reactor) leaderLogFence(g uint64, dir string, lf consensus.VoteFence) bool {
	if lf.IsZero() {
		return true
	}
	was := r.local[g].fence
	if err := writeFence(r.env.FS, dir, lf); err != nil {
		return true
	}
	r.local[g].fence = lf
	if was.IsLostLog() {
		r.env.Logf("node %d: group %d: lost-log fence is now the leader's log end %v", r.self, g, lf)
	} else {
		r.env.Logf("node %d: group %d: fence %v is now the log end %v of the leader of its term", r.self, g, was, lf)
	}
	return false
}
