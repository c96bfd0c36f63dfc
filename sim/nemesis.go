package sim

import (
	"fmt"
	"math/rand"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/sim/world"
)

// nemesis injects a run's faults during the safety phase: at exponentially
// distributed intervals (the sum of the seed's rates) it picks a fault in
// proportion to its rate, applies it, and schedules its heal after a
// seeded duration. A supervisor restarts nodes that went down on their own
// (Env.Fatal), as systemd would.
type nemesis struct {
	r   *run
	w   *World
	o   FaultOptions
	rng *rand.Rand
	on  bool
	// restartDue marks nodes with a restart scheduled.
	restartDue map[netx.NodeID]bool
	// corrupted are the nodes whose files were damaged; damagedDirs counts,
	// per replica directory (one Raft group's log), the nodes whose copy
	// was damaged: at most a minority of each group's replicas, so the
	// others keep good copies.
	corrupted   map[netx.NodeID]bool
	damagedDirs map[string]map[netx.NodeID]bool
	// replaced are the nodes whose disk was replaced. Each counts as a
	// damaged copy in every group (damageOf): a replaced broker opens
	// fenced every replica of a group created before it registered its new
	// disk, including groups created while it was down, which its wiped
	// directories did not list (seed 945017 with -replace-disk: a group
	// created then, fenced on the replaced node, also lost its copy on a
	// lying node and could never elect).
	replaced map[netx.NodeID]bool
	// shrunk marks the workload topic's partitions a reassignment was
	// asked to shrink to two replicas: the corruption fault no longer
	// damages their copies (two voters tolerate no damaged one, and the
	// request may take effect whatever its answer said).
	shrunk map[int32]bool
	// decommissioned is the broker decommissioned in this run (0: none).
	decommissioned netx.NodeID
	// counts of faults applied, by kind, for the run's figures.
	counts map[string]int
	// more are the faults of faults_more.go.
	more *moreFaults
	// vw is what the voter-change fault knows (voters.go); nil until it
	// first runs.
	vw *voterWork
}

type faultKind struct {
	name  string
	rate  float64
	apply func()
}

func newNemesis(r *run) *nemesis {
	n := &nemesis{
		r: r, w: r.w, o: r.o.Faults, rng: rand.New(rand.NewSource(r.w.Rand().Int63())),
		restartDue: map[netx.NodeID]bool{}, corrupted: map[netx.NodeID]bool{}, counts: map[string]int{},
		damagedDirs: map[string]map[netx.NodeID]bool{}, shrunk: map[int32]bool{}, replaced: map[netx.NodeID]bool{},
	}
	n.more = newMoreFaults(n)
	return n
}

func (n *nemesis) kinds() []faultKind {
	return append([]faultKind{
		{"crash", n.o.Crash, n.crash},
		{"powercut", n.o.PowerCut, n.powerCut},
		{"pause", n.o.Pause, n.pause},
		{"partition", n.o.Partition, n.partition},
		{"clock", n.o.Clock, n.clock},
		{"transfer", n.o.Transfer, n.transfer},
		{"corrupt", n.o.Corrupt, n.corrupt},
		{"replace-disk", n.o.ReplaceDisk, n.replaceDisk},
		{"reassign", n.o.Reassign, n.reassign},
		{"decommission", n.decommissionRate(), n.decommission},
	}, n.more.kinds()...)
}

// decommissionRate is the rate of the decommission fault: a quarter of the
// reassignment rate, in clusters of four brokers or more only: 5-node ones,
// and 3-node ones once a broker joined (membership.go, join.go).
func (n *nemesis) decommissionRate() float64 {
	if len(n.w.IDs()) < 4 {
		return 0
	}
	return n.o.Reassign / 4
}

// start turns the link and disk faults on and begins injecting.
func (n *nemesis) start() {
	n.on = true
	n.w.SetFaults(n.o.Link)
	for _, id := range n.w.IDs() {
		n.w.FS(id).SetFailProb(logstore.OpSync, n.o.SyncFailProb)
		n.w.FS(id).SetFailProb(logstore.OpWrite, n.o.WriteFailProb)
	}
	n.more.start()
	n.startVoters() // voters.go: its own schedule
	n.scheduleNext()
	n.supervise()
}

// stop ends injection and heals everything: network, disks, paused and
// down nodes. Clock skew stays: a healthy cluster lives with it.
func (n *nemesis) stop() {
	n.on = false
	n.w.Tracef("nemesis: heal everything")
	n.w.Heal()
	n.w.SetFaults(netx.LinkFaults{DelayMin: n.o.Link.DelayMin, DelayMax: n.o.Link.DelayMax})
	n.more.stop()
	for _, id := range n.w.IDs() {
		n.w.FS(id).SetFailProb(logstore.OpSync, 0)
		n.w.FS(id).SetFailProb(logstore.OpWrite, 0)
		if n.w.Paused(id) {
			n.w.Resume(id)
		}
		if !n.w.Up(id) {
			n.w.Restart(id)
		}
	}
	n.superviseAfterHeal()
}

// superviseAfterHeal restarts a node that exits after the heal of a fault
// injected before it: with pipelined fsync rounds, a round that failed
// before the heal is reported behind an older round that completes after
// it (seed 1403697), and the node's fatal exit comes after the heal. A
// supervisor restarts it, as supervise did before the heal. Other fatal
// exits are left down (the run reports them as node-fatal or known).
func (n *nemesis) superviseAfterHeal() {
	n.w.SetOnFatalExit(func(ev world.FatalEvent) {
		if !injected(ev.Err) {
			return
		}
		n.w.After(healRestartDelay, func() {
			if !n.w.Up(ev.ID) {
				n.w.Restart(ev.ID)
			}
		})
	})
}

// healRestartDelay is how long after a fatal exit with an injected cause
// the healed cluster's supervisor restarts the node.
const healRestartDelay = 100 * time.Millisecond

func (n *nemesis) scheduleNext() {
	total := 0.0
	for _, k := range n.kinds() {
		total += k.rate
	}
	if total <= 0 {
		return
	}
	wait := time.Duration(n.rng.ExpFloat64() / total * float64(time.Second))
	n.w.After(wait, func() {
		if !n.on {
			return
		}
		x := n.rng.Float64() * total
		for _, k := range n.kinds() {
			if x < k.rate {
				n.counts[k.name]++
				k.apply()
				break
			}
			x -= k.rate
		}
		n.scheduleNext()
	})
}

// supervise restarts, after a while, any node down with no restart
// scheduled (one that stopped itself).
func (n *nemesis) supervise() {
	n.w.After(100*time.Millisecond, func() {
		if !n.on {
			return
		}
		for _, id := range n.w.IDs() {
			if !n.w.Up(id) && !n.restartDue[id] {
				n.restartAfter(id, n.duration()/2)
			}
		}
		n.supervise()
	})
}

func (n *nemesis) duration() time.Duration {
	lo := 20 * time.Millisecond
	if n.o.DurMax <= lo {
		return lo
	}
	return lo + time.Duration(n.rng.Int63n(int64(n.o.DurMax-lo)))
}

func (n *nemesis) restartAfter(id netx.NodeID, d time.Duration) {
	n.restartDue[id] = true
	n.w.After(d, func() {
		delete(n.restartDue, id)
		if n.on && !n.w.Up(id) {
			n.w.Restart(id)
		}
	})
}

// target picks a node: with probability Aim a partition leader or the
// controller as the clients last saw them, otherwise any node.
func (n *nemesis) target() netx.NodeID {
	ids := n.w.IDs()
	if n.rng.Float64() < n.o.Aim {
		if n.rng.Intn(3) == 0 && n.r.meta.controller != 0 {
			return n.r.meta.controller
		}
		if id, ok := n.r.meta.leader(int32(n.rng.Intn(int(n.r.o.Partitions)))); ok {
			return id
		}
	}
	return ids[n.rng.Intn(len(ids))]
}

func (n *nemesis) crashMode() logstore.CrashMode {
	return []logstore.CrashMode{logstore.CrashRandom, logstore.CrashLoseAll, logstore.CrashKeepAll, logstore.CrashTornLast}[n.rng.Intn(4)]
}

func (n *nemesis) crash() {
	id := n.target()
	if !n.w.Up(id) {
		return
	}
	n.w.CrashWith(id, n.crashMode())
	n.restartAfter(id, n.duration())
}

// powerCut crashes a majority, or every node, at one instant.
func (n *nemesis) powerCut() {
	ids := n.shuffled()
	k := len(ids)/2 + 1
	if n.rng.Intn(2) == 0 {
		k = len(ids)
	}
	n.w.Tracef("nemesis: power cut of %d nodes", k)
	for _, id := range ids[:k] {
		if n.w.Up(id) {
			n.w.CrashWith(id, []logstore.CrashMode{logstore.CrashRandom, logstore.CrashLoseAll}[n.rng.Intn(2)])
			n.restartAfter(id, n.duration())
		}
	}
}

func (n *nemesis) pause() {
	id := n.target()
	if !n.w.Up(id) || n.w.Paused(id) {
		return
	}
	n.w.Pause(id)
	n.w.After(n.duration(), func() { n.w.Resume(id) })
}

func (n *nemesis) shuffled() []netx.NodeID {
	ids := n.w.IDs()
	n.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids
}

// partition applies one network partition and heals it later.
func (n *nemesis) partition() {
	ids := n.shuffled()
	switch n.rng.Intn(4) {
	case 0: // isolate one node
		n.w.Isolate(n.target())
	case 1: // majority | minority
		k := 1 + n.rng.Intn(len(ids)-1)
		n.w.Partition(ids[:k], ids[k:])
	case 2: // bridge: two halves that both reach one node
		half := (len(ids) - 1) / 2
		a, b := ids[1:1+half], ids[1+half:]
		n.w.Tracef("nemesis: bridge through n%d", ids[0])
		for _, x := range a {
			for _, y := range b {
				n.w.Cut(x, y)
				n.w.Cut(y, x)
			}
		}
	default: // asymmetric: a node that can receive but not send, or the reverse
		id := n.target()
		out := n.rng.Intn(2) == 0
		for _, other := range ids {
			if other == id {
				continue
			}
			if out {
				n.w.Cut(id, other)
			} else {
				n.w.Cut(other, id)
			}
		}
	}
	n.w.After(n.duration(), n.w.Heal)
}

// clock skews or jumps one node's wall clock, by up to minutes: far less
// than any retention, so no data may legitimately expire.
func (n *nemesis) clock() {
	id := n.target()
	d := time.Duration(n.rng.Int63n(int64(2*time.Minute))) - time.Minute
	if n.rng.Intn(2) == 0 {
		n.w.SkewClock(id, 10*d)
		return
	}
	n.w.JumpClock(id, d)
}

// transfer makes one node hand off every leadership it holds, as an
// operator draining it would.
func (n *nemesis) transfer() {
	id := n.target()
	n.w.Call(id, 0, "admin transfer-leaderships", func(inst Instance) {
		if b, ok := inst.(*Broker); ok {
			b.R.TransferLeaderships()
		}
	}, nil)
}

// reassign moves one partition of the topic to a new replica set, as an
// operator would with AlterPartitionReassignments: another set of brokers
// in a 5-node cluster (never a decommissioned one), a reordering (new preferred leader) or a shrink to
// two replicas and back in a 3-node one. It is an admin request, not an
// operation of the history.
func (n *nemesis) reassign() {
	r := n.r
	part := int32(n.rng.Intn(int(r.o.Partitions)))
	ids := n.reassignable()
	k := min(3, len(ids))
	if len(ids) == 3 && n.rng.Intn(3) == 0 {
		// Two replicas tolerate no damaged copy (a minority of two is
		// none): shrink to two brokers whose copy was never damaged.
		if u := n.undamaged(ids, part); len(u) >= 2 {
			ids, k = u, 2
			n.shrunk[part] = true
		}
	}
	replicas := make([]int32, k)
	for i := range replicas {
		replicas[i] = int32(ids[i])
	}
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = r.topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = part, replicas
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	n.w.Tracef("fault reassign %s/%d to %v", r.topic, part, replicas)
	r.kn.call(r.meta.anyNode(), req, 2*time.Second, func(resp kmsg.Response, err error) {
		code := int16(-1)
		if err == nil {
			ar := resp.(*kmsg.AlterPartitionAssignmentsResponse)
			code = ar.ErrorCode
			for _, t := range ar.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode != 0 {
						code = p.ErrorCode
					}
				}
			}
		}
		n.w.Tracef("reassign %s/%d to %v: err=%v code=%d", r.topic, part, replicas, err, code)
	})
}

// corrupt damages one file of one node, while it is down, where the other
// replicas keep good copies: it crashes the node, flips a bit in or cuts
// the tail of one of its log files (a segment, an index, the controller's
// log; a meta file only gets a flipped bit), and restarts it later. A
// replica's log is damaged at most once, and in each group at most a
// minority of the replicas. A segment is cut back only to below the commit
// index its log's meta record holds: a disk losing synced data above it is
// indistinguishable from a torn write, and is not in the fault model
// (logstore.SimFS.CommittedPrefix, docs/testing.md).
func (n *nemesis) corrupt() {
	id := n.target()
	var files []string
	for _, f := range dataFiles(n.w.FS(id), "data") {
		dir := path.Dir(f)
		if !n.damagedDirs[dir][id] && n.damageOf(dir, id)+1 <= (n.groupSize(dir)-1)/2 {
			files = append(files, f)
		}
	}
	if n.o.CutController {
		if segs := controllerSegments(files); len(segs) > 0 {
			files = segs
		}
	}
	if len(files) == 0 {
		return
	}
	if n.w.Up(id) {
		n.w.CrashWith(id, n.crashMode())
	}
	name := files[n.rng.Intn(len(files))]
	data, err := n.w.FS(id).ReadFile(name)
	if err != nil || len(data) == 0 {
		if !n.restartDue[id] {
			n.restartAfter(id, n.duration())
		}
		return
	}
	n.corrupted[id] = true
	dir := path.Dir(name)
	if n.damagedDirs[dir] == nil {
		n.damagedDirs[dir] = map[netx.NodeID]bool{}
	}
	n.damagedDirs[dir][id] = true
	off := n.rng.Int63n(int64(len(data)))
	cutMax := int64(len(data))
	if strings.HasSuffix(name, ".log") {
		cutMax = n.w.FS(id).CommittedPrefix(dir, path.Base(name))
	}
	flip := n.rng.Intn(2) == 0 || isMetaFile(name) || cutMax == 0
	if n.o.CutController && strings.HasPrefix(name, "data/controller/") && cutMax > 0 {
		flip = false
	}
	if flip {
		bit := uint(n.rng.Intn(8))
		if strings.HasSuffix(name, ".log") {
			off = n.w.FS(id).FlipTarget(dir, path.Base(name), off) // a flip that reads as a tear is outside the model
		}
		n.w.Tracef("fault corrupt n%d: flip bit %d of byte %d of %s (%d bytes)", id, bit, off, name, len(data))
		_ = n.w.FS(id).FlipBit(name, off, bit)
	} else {
		off = n.rng.Int63n(cutMax)
		n.w.Tracef("fault corrupt n%d: truncate %s from %d to %d bytes", id, name, len(data), off)
		_ = n.w.FS(id).TruncateFile(name, off)
	}
	n.r.corruptedFiles = append(n.r.corruptedFiles, fmt.Sprintf("n%d:%s", id, name))
	if !n.restartDue[id] {
		n.restartAfter(id, n.duration())
	}
}

// controllerSegments keeps the controller's log segments of files.
func controllerSegments(files []string) []string {
	var out []string
	for _, f := range files {
		if strings.HasPrefix(f, "data/controller/") && strings.HasSuffix(f, ".log") {
			out = append(out, f)
		}
	}
	return out
}

// undamaged filters ids down to the brokers whose copy of the workload
// topic's partition part was never damaged, keeping their order.
func (n *nemesis) undamaged(ids []netx.NodeID, part int32) []netx.NodeID {
	prefix := fmt.Sprintf("data/partitions/%s-%d-", n.r.topic, part)
	var out []netx.NodeID
	for _, id := range ids {
		hit := false
		for dir, nodes := range n.damagedDirs {
			hit = hit || (strings.HasPrefix(dir, prefix) && nodes[id])
		}
		if !hit {
			out = append(out, id)
		}
	}
	return out
}

// groupSize is the fewest voters the group of replica directory dir has
// at any time: the nodes holding the directory, but for a partition's
// group at most its replication factor (every topic of a run has
// min(3, nodes): partitionRF), or 2 once a shrink to two of the workload
// topic's partition was asked. A walk leaves directories on brokers
// joining or leaving, more than the group's voters (seed 300840: two
// damaged copies of five directories were half of a 4-voter group in the
// middle of the reassignment fault's walk), and not only the workload
// topic's partitions move: the balancer and a decommission move every
// topic's (seed 1700474: __consumer_offsets-0's directory was on all five
// brokers after a cancelled balancer move and a decommission's, so a lie's
// loss on n3 and n5's disk replacement, two of five, passed the budget,
// but were two of the group's four voters [2 3 4 5], and it never elected
// again).
func (n *nemesis) groupSize(dir string) int {
	size := n.replicasOf(dir)
	if n.o.Voters > 0 && strings.HasPrefix(dir, "data/controller") {
		size = min(size, n.minVoters()) // the voter fault demotes some (voters.go)
	}
	if strings.HasPrefix(dir, "data/partitions/") {
		size = min(size, partitionRF(n.r.o.Nodes))
	}
	if part := n.partitionOf(dir); part >= 0 && n.shrunk[part] {
		size = 2
	}
	return size
}

// partitionRF is the replication factor of every topic a run creates, on
// nodes brokers: the topics the workloads create ask for min(3, nodes),
// and the brokers' default.replication.factor (the internal topics', and
// the balancer's skew topic's) is the same (broker.go).
func partitionRF(nodes int) int { return min(3, nodes) }

// replicasOf counts the nodes holding the replica directory dir. It asks
// SimFS.Exists, not List: the nemesis never injects List errors, so the
// two agree on a directory, and Exists neither sorts nor copies the
// directory's names (List here was 6% of a long seed's CPU, called once per
// file of every node at every corruption).
func (n *nemesis) replicasOf(dir string) int {
	c := 0
	for _, id := range n.w.IDs() {
		if n.w.FS(id).Exists(dir) {
			c++
		}
	}
	return c
}

// dataFiles lists the segment and index files under dir, sorted.
func dataFiles(fs *logstore.SimFS, dir string) []string {
	var out []string
	var walk func(d string, depth int)
	walk = func(d string, depth int) {
		names, err := fs.List(d)
		if err != nil || depth > 4 {
			return
		}
		for _, name := range names {
			p := path.Join(d, name)
			switch {
			case strings.HasSuffix(name, ".log") || strings.HasSuffix(name, ".idx") || isMetaFile(name):
				out = append(out, p)
			default:
				walk(p, depth+1) // a directory, or List fails and it is skipped
			}
		}
	}
	walk(dir, 0)
	sort.Strings(out)
	return out
}

// isMetaFile reports whether name is a log's meta file (logstore/meta.go).
// The fault flips its bits but never cuts it: a meta file holds its record
// twice, which survives a flipped bit; a disk that loses a synced record
// outright is not in the fault model (docs/testing.md).
func isMetaFile(name string) bool {
	base := path.Base(name)
	return base == "meta.a" || base == "meta.b"
}

// summary lists the faults applied, sorted by name.
func (n *nemesis) summary() string {
	keys := make([]string, 0, len(n.counts))
	for k := range n.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, n.counts[k])
	}
	return strings.Join(parts, " ")
}

// damageOf counts the damaged copies of dir's group that a new damage on
// node id would add to: those damagedDirs records, and every other node
// whose disk was replaced (see replaced).
func (n *nemesis) damageOf(dir string, id netx.NodeID) int {
	c := len(n.damagedDirs[dir])
	for r := range n.replaced { //floe:unordered only counts
		if r != id && !n.damagedDirs[dir][r] {
			c++
		}
	}
	return c
}
