package sim

import (
	"fmt"
	"math"
	"math/rand"
	"path"
	"time"

	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node"
)

// More faults (issue 15), drawn per seed at the end of ChooseOptions so the
// options every earlier draw gave a seed stay as they were:
//
//   - clock drift: a node's monotonic clock runs at its own rate
//     (world.SetClockRate), within the bound the read leases assume
//     (driftRatio); DriftUnsafe (negative tests only) goes beyond it;
//   - disk full: one node's writes fail with ENOSPC for a while, then the
//     space frees (logstore.SimFS.SetFull);
//   - read errors: reads fail (EIO) with a small probability;
//   - a lying fsync on one node (a minority of every group): a sync of a
//     segment file returns success without persisting
//     (SimFS.SetLyingSegments); a crash that loses what it claimed
//     durable either cuts the segment below its recorded commit, as the
//     corruption fault does and within the same damage budget, or keeps
//     it (lieMayLose); LieAll (negative tests only) puts it on every
//     node and every file, unbounded;
//   - client-link faults: the clients' links to one broker are cut for a
//     while (requests vanish; the client times out), and responses are
//     lost on the way back (the request may have been served);
//   - link clogging: one broker-to-broker link holds everything for a
//     while, then delivers it in order;
//   - knobs: tick, election and heartbeat ticks, lease margin, offsets
//     partitions, segment and fetch sizes, within safe ranges.
//
// Every draw and choice of these faults uses a generator of its own
// (moreFaults.rng), so a seed with none of them on runs as before.

// moreFaultOptions are the rates and switches of the faults above. Rates
// are mean faults per simulated second, zero off.
type moreFaultOptions struct {
	Drift       float64 // set one node's clock rate
	DriftRatio  float64 // the largest ratio between two nodes' clock rates
	DriftUnsafe bool    // negative tests: rates far beyond the lease bound
	DiskFull    float64 // fill one node's disk for a while
	ReadFail    float64 // probability a read fails
	LyingSync   float64 // probability a sync of the lying node lies
	LieAll      bool    // negative tests: every node's fsync lies
	ClientCut   float64 // cut the clients off one broker for a while
	ClientLoss  float64 // probability a response to a client is lost
	Clog        float64 // clog one broker-to-broker link for a while
}

// LyingRate is the probability a sync of the lying node lies when a run
// forces the fault on in every seed (WithLying, -lying, --lying); by
// default about 40% of the seeds draw it, at 0.05-0.5 (chooseMore).
const LyingRate = 0.3

// WithLying returns o with the lying fsync on one node (a minority of
// every group) at LyingRate, whatever the seed drew.
func (o Options) WithLying() Options {
	o.Faults.More.LyingSync = LyingRate
	return o
}

// knobs are the run's randomized sizes (0: the fixed defaults).
type knobs struct {
	SegmentBytes int   // the workload topic's segment.bytes
	FetchBytes   int32 // the fetchers' PartitionMaxBytes
}

// driftRatio is the largest clock-rate ratio the simulator draws for a
// lease margin: 90% of the way to the bound 1/margin the leases assume.
func driftRatio(margin float64) float64 {
	if margin <= 0 {
		margin = 0.8
	}
	return 1 + 0.9*(1/margin-1)
}

// chooseMore draws the faults and knobs above, last in ChooseOptions.
func chooseMore(rng *rand.Rand, o *Options) {
	pick := func(p float64) bool { return rng.Float64() < p }
	rate := func(p, lo, hi float64) float64 {
		if !pick(p) {
			return 0
		}
		return lo + rng.Float64()*(hi-lo)
	}
	if pick(0.5) { // timing knobs
		b := &o.Broker
		b.Tick = time.Duration(8+rng.Intn(8)) * time.Millisecond
		b.ElectionTicks = 8 + rng.Intn(9)
		b.HeartbeatTicks = 1 + rng.Intn(b.ElectionTicks/4)
		b.LeaseMargin = 0.6 + 0.2*rng.Float64()
	}
	if pick(0.3) {
		o.Broker.OffsetsPartitions = int32(1 + rng.Intn(3))
	}
	if pick(0.5) {
		o.Knobs.SegmentBytes = []int{2048, 4096, 65536}[rng.Intn(3)]
		o.Knobs.FetchBytes = []int32{256, 2048, 8192}[rng.Intn(3)]
	}
	// A small controller snapshot limit in a third of the seeds, so the
	// metadata log is compacted and lagging members are sent snapshots
	// (drawn from its own generator: the draws above stay as they were).
	if srng := rand.New(rand.NewSource(o.Seed ^ 0x5a47)); srng.Intn(3) == 0 {
		o.Broker.CtlSnapshotEntries = 8 + srng.Intn(57)
	}
	m := &o.Faults.More
	m.Drift = rate(0.4, 0.3, 2)
	m.DriftRatio = driftRatio(o.Broker.LeaseMargin)
	m.DiskFull = rate(0.2, 0.1, 0.5)
	m.ReadFail = rate(0.2, 0.0005, 0.005)
	m.LyingSync = rate(0.4, 0.05, 0.5)
	m.ClientCut = rate(0.3, 0.2, 1.5)
	m.ClientLoss = rate(0.3, 0.005, 0.05)
	m.Clog = rate(0.3, 0.2, 2)
}

// String lists the faults and knobs, for Options.String.
func (m moreFaultOptions) String() string {
	return fmt.Sprintf("more: drift=%.2f ratio<=%.3f unsafe=%v disk-full=%.2f read-fail=%.4f lying-sync=%.2f lie-all=%v client-cut=%.2f client-loss=%.3f clog=%.2f",
		m.Drift, m.DriftRatio, m.DriftUnsafe, m.DiskFull, m.ReadFail, m.LyingSync, m.LieAll, m.ClientCut, m.ClientLoss, m.Clog)
}

// moreFaults is the nemesis's state for the faults above.
type moreFaults struct {
	n   *nemesis
	o   moreFaultOptions
	rng *rand.Rand
	// liar is the node whose fsync lies (0: none); clogged the links
	// clogged now.
	liar    netx.NodeID
	clogged map[[2]netx.NodeID]bool
	drifted bool
}

func newMoreFaults(n *nemesis) *moreFaults {
	return &moreFaults{n: n, o: n.o.More, rng: rand.New(rand.NewSource(n.r.o.Seed ^ 0x0f1a75)), clogged: map[[2]netx.NodeID]bool{}}
}

func (m *moreFaults) kinds() []faultKind {
	return []faultKind{
		{"drift", m.o.Drift, m.drift},
		{"disk-full", m.o.DiskFull, m.diskFull},
		{"client-cut", m.o.ClientCut, m.clientCut},
		{"clog", m.o.Clog, m.clog},
	}
}

// start turns on the faults that last the whole safety phase.
func (m *moreFaults) start() {
	n := m.n
	for _, id := range n.w.IDs() {
		n.w.FS(id).SetFailProb(logstore.OpRead, m.o.ReadFail)
	}
	n.r.kn.faults = &clientFaults{rng: rand.New(rand.NewSource(m.rng.Int63())), loss: m.o.ClientLoss, cut: map[netx.NodeID]bool{}}
	switch {
	case m.o.LieAll:
		for _, id := range n.w.IDs() {
			n.w.Tracef("fault lying-fsync n%d p=%.2f", id, m.o.LyingSync)
			n.w.FS(id).SetLying(m.o.LyingSync)
		}
	case m.o.LyingSync > 0:
		// One liar, and what its lies lose counts against the corruption
		// fault's budget (at most a minority of each group's replicas,
		// each replica's log damaged at most once; none of a partition
		// shrunk to two): lieMayLose.
		ids := n.w.IDs()
		m.liar = ids[m.rng.Intn(len(ids))]
		n.w.Tracef("fault lying-fsync n%d p=%.2f", m.liar, m.o.LyingSync)
		id := m.liar
		n.w.FS(id).SetLyingSegments(m.o.LyingSync, func(name string) bool { return m.lieMayLose(id, name) })
	}
}

// stop heals them: disks honest and with space, links unclogged, clients
// reconnected. Clock rates stay (within the bound a healthy cluster
// lives with them), but unsafe ones are reset.
func (m *moreFaults) stop() {
	n := m.n
	for _, id := range n.w.IDs() {
		fs := n.w.FS(id)
		fs.SetFailProb(logstore.OpRead, 0)
		fs.SetFull(false)
		if id == m.liar && !m.o.LieAll {
			// No new lies, but a later crash still resolves the old ones.
			liar := id
			fs.SetLyingSegments(0, func(name string) bool { return m.lieMayLose(liar, name) })
		} else {
			fs.SetLying(0)
		}
		if m.o.DriftUnsafe {
			n.w.SetClockRate(id, 1)
		}
	}
	for link := range m.clogged { //floe:unordered each link is cleared on its own
		n.w.Net().ClearLinkFaults(link[0], link[1])
	}
	clear(m.clogged)
	if f := n.r.kn.faults; f != nil {
		f.loss = 0
		clear(f.cut)
	}
}

// lies reports whether node id's fsync lies beyond the fault model (the
// negative test's LieAll): what it calls durable may be lost unawares, so
// the invariants that hold a node to its own durable state skip it
// (invariants.go). The one liar of the default fault mix is not skipped:
// its meta records (term, vote, commit) never lie, and a segment it
// lost is damage like the corruption fault's (lieMayLose).
func (m *moreFaults) lies(id netx.NodeID) bool {
	return m.o.LieAll
}

// lieMayLose decides, at a crash of node id, whether its segment file
// name may lose what a lying sync claimed durable (cut below its log's
// recorded commit, logstore.SimFS.SetLyingSegments): only within the
// corruption fault's budget. A loss that stands is recorded as that
// fault's damage is (damagedDirs, corruptedFiles), so the reassignment
// fault keeps the copy out of a shrink to two and the invariants treat
// the replica as damaged.
func (m *moreFaults) lieMayLose(id netx.NodeID, name string) bool {
	n := m.n
	dir := path.Dir(name)
	if n.damagedDirs[dir][id] {
		// Damaged already (by this lie's crash too): one loss per replica.
		return false
	}
	if n.damageOf(dir, id)+1 > (n.groupSize(dir)-1)/2 {
		n.w.Tracef("fault lying-fsync n%d: %s kept (no damage budget)", id, name)
		return false
	}
	n.corrupted[id] = true
	if n.damagedDirs[dir] == nil {
		n.damagedDirs[dir] = map[netx.NodeID]bool{}
	}
	n.damagedDirs[dir][id] = true
	n.w.Tracef("fault lying-fsync n%d: %s lost what a lie called synced", id, name)
	n.r.corruptedFiles = append(n.r.corruptedFiles, fmt.Sprintf("n%d:%s", id, name))
	n.r.cover(covLieLost)
	return true
}

// drift sets the target's clock rate: within [1/sqrt(ratio), sqrt(ratio)]
// so no two nodes' rates are further apart than DriftRatio, or, unsafe,
// a fifth or two and a half times true time.
func (m *moreFaults) drift() {
	id := m.n.target()
	var rate float64
	if m.o.DriftUnsafe {
		rate = []float64{0.2, 2.5}[m.rng.Intn(2)]
	} else {
		s := math.Sqrt(m.o.DriftRatio)
		lo, hi := 1/s, s
		rate = lo + m.rng.Float64()*(hi-lo)
	}
	m.n.w.SetClockRate(id, rate)
	m.n.r.cover(covDrift)
}

// diskFull fills the target's disk, and frees it after a while.
func (m *moreFaults) diskFull() {
	id := m.n.target()
	fs := m.n.w.FS(id)
	m.n.w.Tracef("fault disk-full n%d", id)
	fs.SetFull(true)
	m.n.w.After(m.n.duration(), func() {
		m.n.w.Tracef("fault disk-freed n%d", id)
		fs.SetFull(false)
	})
}

// clientCut cuts the clients off one broker for a while.
func (m *moreFaults) clientCut() {
	id := m.n.target()
	f := m.n.r.kn.faults
	m.n.w.Tracef("fault client-cut n%d", id)
	f.cut[id] = true
	m.n.w.After(m.n.duration(), func() {
		m.n.w.Tracef("fault client-heal n%d", id)
		delete(f.cut, id)
	})
}

// clog clogs one broker-to-broker link for a while.
func (m *moreFaults) clog() {
	ids := m.n.w.IDs()
	from := ids[m.rng.Intn(len(ids))]
	to := ids[m.rng.Intn(len(ids))]
	if from == to {
		return
	}
	link := [2]netx.NodeID{from, to}
	lf := m.n.o.Link
	lf.Clogged = true
	m.n.w.Tracef("fault clog n%d->n%d", from, to)
	m.n.w.Net().SetLinkFaults(from, to, lf)
	m.clogged[link] = true
	m.n.r.cover(covClog)
	m.n.w.After(m.n.duration(), func() {
		if m.clogged[link] {
			m.n.w.Tracef("fault unclog n%d->n%d", from, to)
			m.n.w.Net().ClearLinkFaults(from, to)
			delete(m.clogged, link)
		}
	})
}

// clientFaults are the client-link faults kafkaNet applies (kclient.go).
type clientFaults struct {
	rng  *rand.Rand
	loss float64
	cut  map[netx.NodeID]bool
	// cutOff and lost count the requests and responses lost.
	cutOff, lost int
}

// dropRequest reports whether a request to id is lost to a cut link.
func (f *clientFaults) dropRequest(id netx.NodeID) bool {
	if f == nil || !f.cut[id] {
		return false
	}
	f.cutOff++
	return true
}

// dropResponse reports whether a response is lost on its way back.
func (f *clientFaults) dropResponse() bool {
	if f == nil || f.loss <= 0 || f.rng.Float64() >= f.loss {
		return false
	}
	f.lost++
	return true
}

// siteCounter passes BUGGIFY firings to the run (node.Env.OnBuggify).
type siteCounter struct{ fn func(site string) }

func (c *siteCounter) hook() func(string) {
	if c == nil {
		return nil
	}
	return c.fn
}

// Coverage rows of the faults above and of every BUGGIFY site.
const (
	buggifyCoverage = "buggify: "
	covDrift        = "fault: clock drift within the lease bound"
	covDiskFull     = "fault: write refused, disk full"
	covReadFail     = "fault: read error injected"
	covLied         = "fault: fsync lied (one node)"
	covLieLost      = "fault: a crash lost what a lying fsync synced (found as damage)"
	covClientCut    = "fault: request lost to a client-link cut"
	covClientLoss   = "fault: response lost on a client link"
	covClog         = "fault: broker link clogged"
	covKnobs        = "knobs: randomized broker timing"
)

func init() {
	coveragePaths = append(coveragePaths, covDrift, covDiskFull, covReadFail, covLied, covLieLost, covClientCut, covClientLoss, covClog, covKnobs)
	for _, s := range node.BuggifySites() {
		if !buggifyRare[s] {
			coveragePaths = append(coveragePaths, buggifyCoverage+s)
		}
	}
}

// buggifyRare are the BUGGIFY sites on paths the default seeds do not
// take (they are still counted and printed): the simulator runs no share
// groups; an opt-in site (node/buggify.go) fires only in the focused test
// that turns it on.
var buggifyRare = map[string]bool{"share-coordinator-loading": true, "pending-rebuild-read-fails": true}

// coverMore adds the faults' counts at the end of a run.
func (r *run) coverMore() {
	m := r.nem.more
	if m.o.DriftUnsafe {
		delete(r.coverage, covDrift)
	}
	for _, id := range r.w.IDs() {
		fs := r.w.FS(id)
		r.coverN(covDiskFull, int(fs.NoSpace()))
		r.coverN(covReadFail, int(fs.Injected(logstore.OpRead)))
		r.coverN(covLied, int(fs.Lies()))
	}
	if f := r.kn.faults; f != nil {
		r.coverN(covClientCut, f.cutOff)
		r.coverN(covClientLoss, f.lost)
	}
	if r.o.Broker.LeaseMargin != 0 {
		r.cover(covKnobs)
	}
}
