package sim

import (
	"math/rand"
	"path"

	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
)

// The disk-loss replacement fault (issue 23): a node's whole disk is lost
// and the broker is started again, later, under the same id on an empty
// data directory (node/disk.go fences its old groups' replicas until they
// have caught up with a leader). Part of the default fault set (issue 13):
// about a third of the seeds draw it (chooseReplaceDisk, from its own
// generator, so every other draw of a seed stays what it was);
// -replace-disk / --replace-disk (WithReplaceDisk) forces it on in every
// seed.
//
// Like the corruption fault it counts against the damage budget: a node's
// disk is replaced only if, for every replica directory it holds, at most
// a minority of the group's replicas are then damaged or replaced
// (nemesis.damagedDirs), so a majority of every group keeps its data. From
// then on the replaced node counts as a damaged copy of every group
// (nemesis.damageOf), since it opens fenced the replicas of groups created
// while it was down too.

// ReplaceDiskRate is the rate of the fault when a run forces it on.
const ReplaceDiskRate = 0.5

// WithReplaceDisk returns o with the disk-loss replacement fault on at
// ReplaceDiskRate, whatever the seed drew.
func (o Options) WithReplaceDisk() Options {
	o.Faults.ReplaceDisk = ReplaceDiskRate
	return o
}

// chooseReplaceDisk draws the rate of the disk-loss replacement fault: on
// in about a third of the seeds, at 0.2 to 0.8 a simulated second. Its own
// generator: turning the fault on by default shifted no other draw.
func chooseReplaceDisk(seed int64) float64 {
	rng := rand.New(rand.NewSource(seed ^ 0x0d15c0))
	if rng.Intn(3) != 0 {
		return 0
	}
	return 0.2 + 0.6*rng.Float64()
}

// covDiskReplaced counts the disks the fault wiped (a node restarted on
// an empty disk under its old id).
const covDiskReplaced = "fault: disk replaced (node restarted on an empty disk)"

func init() { coveragePaths = append(coveragePaths, covDiskReplaced) }

// replaceDisk wipes one node's disk (crashing it first) and restarts it
// later on the empty disk.
func (n *nemesis) replaceDisk() {
	id := n.target()
	if n.restartDue[id] && !n.w.Up(id) {
		return // down already, with a restart due: not now
	}
	dirs := map[string]bool{}
	for _, f := range dataFiles(n.w.FS(id), "data") {
		dirs[path.Dir(f)] = true
	}
	if len(dirs) == 0 {
		return
	}
	for dir := range dirs { //floe:unordered only checks every one
		if n.damagedDirs[dir][id] || n.damageOf(dir, id)+1 > (n.groupSize(dir)-1)/2 {
			return // past the budget: a majority of some group would lose its copy
		}
	}
	for dir := range dirs { //floe:unordered only marks every one
		if n.damagedDirs[dir] == nil {
			n.damagedDirs[dir] = map[netx.NodeID]bool{}
		}
		n.damagedDirs[dir][id] = true
	}
	if n.w.Up(id) {
		n.w.CrashWith(id, logstore.CrashLoseAll)
	}
	n.w.Tracef("fault replace-disk n%d: its disk is wiped; it restarts on an empty one under the same id", id)
	n.w.FS(id).Wipe()
	n.replaced[id] = true
	n.r.inv.diskReplaced(id)
	n.r.replacedDisks++
	n.r.cover(covDiskReplaced)
	if !n.restartDue[id] {
		n.restartAfter(id, n.duration())
	}
}
