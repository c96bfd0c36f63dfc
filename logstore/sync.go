package logstore

// Group commit. The reactor appends many times, then calls PrepareSync,
// which captures what one sync will make durable: the files written since
// the last sync (segments, index files), whether the
// directory changed, and the last index. SyncPlan.Run does the fsyncs and
// nothing else, so the runtime may run it on an fsync goroutine while the
// reactor keeps appending; FinishSync, back on the reactor, publishes the
// new DurableIndex.
//
// Rules that make this safe:
//   - At most PlansInFlightMax plans are in flight, and FinishSync takes
//     them in the order PrepareSync made them (pipelined group commit,
//     issue 21). A plan prepared while others are in flight syncs their
//     files and directory too (it holds a superset), so when its Run
//     returns everything written before it was prepared is durable, not
//     only what it added: Run of plan N+1 never depends on Run of N having
//     finished, and N+1's meta record (written after N+1's file syncs)
//     never names an entry only N would have made durable.
//   - At most one plan with a meta record is in flight: the two meta files
//     alternate, and two records written at once could both be torn by a
//     crash, leaving no valid one. A meta record that must be written now
//     (term, vote, snapshot point, start offset, log start, a lowered
//     commit index) blocks PrepareSync (SyncBlocked) until the plan
//     writing the previous one finishes; the routine refresh of the commit
//     index (commitRecordEvery) just waits for a later plan.
//   - While a plan is in flight the log never closes a file the plan may be
//     syncing: files the log stops using go to a graveyard and are closed
//     once no plan in flight holds them. Names may still be removed at
//     once: an open handle outlives its name.
//   - Removals of segment files wait until the next plan completes: a
//     segment dropped because a snapshot covers it must not vanish before
//     the meta record with that snapshot point is on disk, and segments
//     dropped by a truncation must not vanish before the truncation of the
//     segment it cut is on disk (else a crash could keep the old, uncut
//     segment and lose the ones after it). The graveyard holds those names
//     until FinishSync of a plan prepared after the removal.
//   - A failed sync fails the log (ErrFailed): after fsync reports an
//     error, what reached the disk is unknown, and retrying can report
//     success for lost data. The node closes and reopens the log.
//
// The durability order. Files reach the disk in any order once written, so
// a record may only be written once what it describes is durable. Run
// therefore fsyncs the segments and index files first, then the directory
// (new and removed names), and only then writes the meta record's bytes
// and fsyncs the meta file. The meta record's commit index is capped at the
// plan's last index (and at its limit, should a truncation lower that while
// the plan runs), so a durable commit index never names an entry the
// segments do not durably hold, nor a stale entry a truncation replaced.
// The hard state's term and vote ride in the same record: they are durable
// when Run returns, before FinishSync, so before the node sends the vote
// or acknowledgement that reveals them (Raft's persist-before-send rule).

import (
	"errors"
	"path"
	"slices"
	"sync/atomic"
	"time"

	"github.com/floe-broker/floe/internal/assert"
	"github.com/floe-broker/floe/internal/plant"
)

// syncState is the log's durability bookkeeping.
type syncState struct {
	// durableIndex: entries up to it are durable. Invariant: <= lastIndex.
	durableIndex uint64

	dirty []File // written since the last PrepareSync
	// dirtySet holds the files of dirty: markDirty is called for every
	// chunk written and every segment sealed, and a follower catching up
	// in one Ready rolls thousands of small segments, each adding two
	// files (a scan of dirty per call made that quadratic). Invariant:
	// the same files as dirty.
	dirtySet       map[File]struct{}
	dirDirty       bool
	closeAfterSync []File // index files: closed once synced
	// inflight: the plans prepared and not finished, oldest first.
	inflight []*SyncPlan

	meta             metaFiles
	metaSeq          uint64    // seq of the newest record written
	metaVersion      uint64    // bumped by every change the meta record holds
	metaWritten      uint64    // metaVersion of the newest record written
	writtenHS        HardState // what the newest record holds
	durableSnapIndex uint64    // snapshot index of the newest durable record
	durableHS        HardState // what the newest durable record holds

	planSeq     uint64 // plans prepared so far
	durablePlan uint64 // seq of the newest plan finished successfully
}

// Dir returns the directory of the log the plan syncs.
func (p *SyncPlan) Dir() string { return p.dir }

// SyncPlan is one group commit: see the top of sync.go.
type SyncPlan struct {
	fsys       FS
	dir        string
	files      []File
	syncDir    bool
	closeAfter []File
	err        error // a failure while preparing, reported by Run

	lastIndex uint64
	// limit caps what this plan may make durable: a truncation or a
	// snapshot install while the plan is in flight lowers it (on the
	// reactor, while Run may be reading it on another goroutine).
	limit       atomic.Uint64
	seq         uint64
	hasMeta     bool      // the plan writes a meta record holding snapIndex
	meta        string    // the meta file Run writes and syncs, last ("" if none)
	metaRec     metaState // the record Run writes into meta
	snapIndex   uint64
	startedMono time.Duration
}

// PlansInFlightMax is how many sync plans of one log may be in flight at
// once (the pipeline's depth, see the top of this file).
const PlansInFlightMax = 2

// grave is a file the log no longer uses: f is closed when no plan in
// flight holds it; name (if set) is removed once plan needPlan has
// finished.
type grave struct {
	f        File
	name     string
	needPlan uint64
}

func (l *Log) markDirty(f File) {
	if _, ok := l.sy.dirtySet[f]; ok {
		return
	}
	if l.sy.dirtySet == nil {
		l.sy.dirtySet = map[File]struct{}{}
	}
	l.sy.dirtySet[f] = struct{}{}
	l.sy.dirty = append(l.sy.dirty, f)
}

// forget removes f from the files the next plan syncs (it is being retired).
func (l *Log) forget(f File) {
	if _, ok := l.sy.dirtySet[f]; !ok {
		return
	}
	delete(l.sy.dirtySet, f)
	l.sy.dirty = slices.DeleteFunc(l.sy.dirty, func(d File) bool { return d == f })
}

// bury retires a file: closed when safe, and its name (if not "") removed
// once plan needPlan has finished (0: at once).
func (l *Log) bury(f File, name string, needPlan uint64) {
	if f != nil {
		l.forget(f)
	}
	l.graves = append(l.graves, grave{f: f, name: name, needPlan: needPlan})
	l.collectGraves()
}

// afterNextSync is the needPlan of a removal that must wait for the next
// plan.
func (l *Log) afterNextSync() uint64 { return l.sy.planSeq + 1 }

// gravesWaiting says whether a removal waits for a plan not yet prepared.
func (l *Log) gravesWaiting() bool {
	for _, g := range l.graves {
		if g.name != "" && g.needPlan > l.sy.planSeq {
			return true
		}
	}
	return false
}

// collectGraves closes and removes what it safely can.
func (l *Log) collectGraves() {
	keep := l.graves[:0]
	for _, g := range l.graves {
		if g.f != nil && !l.fileInFlight(g.f) {
			g.f.Close()
			g.f = nil
		}
		if g.name != "" && l.sy.durablePlan >= g.needPlan {
			err := l.fs.Remove(path.Join(l.dir, g.name))
			if err == nil || isNotExist(err) {
				if err == nil {
					l.sy.dirDirty = true
				}
				g.name = ""
			}
		}
		if g.f != nil || g.name != "" {
			keep = append(keep, g)
		}
	}
	l.graves = keep
}

// fileInFlight reports whether a plan in flight may be syncing f.
func (l *Log) fileInFlight(f File) bool {
	for _, p := range l.sy.inflight {
		for _, pf := range p.files {
			if pf == f {
				return true
			}
		}
	}
	return false
}

func isNotExist(err error) bool { return errors.Is(err, ErrNotExist) }

// commitRecordEvery is how far the commit index may run ahead of the meta
// record before a sync writes it again. The recorded commit index is how a
// replica that comes back with a shorter log than it had committed (a
// truncated file) knows it lost entries it may have acknowledged; writing
// it every few dozen entries costs a small write in a few group commits.
const commitRecordEvery = 32

// PrepareSync captures a group commit of everything written so far, or
// returns nil when there is nothing to make durable, when it cannot now
// (SyncBlocked), or when the log has failed. It writes the meta record if
// the hard state's term or vote, the snapshot, the start offset or the log
// start changed.
func (l *Log) PrepareSync() *SyncPlan {
	sy := &l.sy
	if l.failed != nil || l.SyncBlocked() {
		return nil
	}
	urgent, routine := l.metaNeeded()
	needMeta := urgent || routine && !l.metaInFlight()
	covered := sy.durableIndex
	if n := len(sy.inflight); n > 0 {
		last := sy.inflight[n-1]
		covered = max(covered, min(last.lastIndex, last.limit.Load()))
	}
	if len(sy.dirty) == 0 && !sy.dirDirty && !needMeta && covered >= l.lastIndex && !l.gravesWaiting() {
		return nil
	}
	flushErr := l.flush()
	sy.planSeq++
	p := &SyncPlan{err: flushErr, fsys: l.fs, dir: l.dir, lastIndex: l.lastIndex, seq: sy.planSeq,
		startedMono: l.monoNow(), syncDir: sy.dirDirty, closeAfter: sy.closeAfterSync}
	p.limit.Store(l.lastIndex)
	if sy.durableIndex < l.lastIndex {
		l.markDirty(l.active().f)
	}
	if needMeta && p.err == nil {
		l.planMeta(p)
	}
	p.files = sy.dirty
	// The plans in flight: this one syncs their files and directory too,
	// so its completion alone makes everything before it durable.
	in := sy.dirtySet // the files of p.files, from here on
	for _, q := range sy.inflight {
		p.syncDir = p.syncDir || q.syncDir
		for _, f := range q.files {
			if _, ok := in[f]; ok {
				continue
			}
			if in == nil {
				in = map[File]struct{}{}
			}
			in[f] = struct{}{}
			p.files = append(p.files, f)
		}
	}
	sy.dirty, sy.dirtySet, sy.dirDirty, sy.closeAfterSync = nil, nil, false, nil
	sy.inflight = append(sy.inflight, p)
	return p
}

// SyncBlocked reports whether PrepareSync must wait for a plan in flight
// to finish: PlansInFlightMax are in flight, or a meta record that must be
// written now waits for the one in flight (see the top of this file).
func (l *Log) SyncBlocked() bool {
	if len(l.sy.inflight) >= PlansInFlightMax {
		return true
	}
	urgent, _ := l.metaNeeded()
	return urgent && l.metaInFlight()
}

// SyncsInFlight returns how many plans are in flight.
func (l *Log) SyncsInFlight() int { return len(l.sy.inflight) }

// metaNeeded says whether the next plan must write the meta record
// (urgent), or should, to refresh the recorded commit index (routine).
//
// A commit index lowered below the recorded one (a repair discarding
// entries, or Raft starting on a log recovered shorter than its record) is
// written at once: recovery would take the old one for lost entries. Open
// itself leaves a recorded commit above the recovered log as it is: it is
// the evidence of the loss until the node has fenced.
func (l *Log) metaNeeded() (urgent, routine bool) {
	sy := &l.sy
	urgent = sy.metaVersion > sy.metaWritten || l.hs.Term != sy.writtenHS.Term || l.hs.Vote != sy.writtenHS.Vote ||
		l.hs.Commit < sy.writtenHS.Commit
	routine = l.hs.Commit >= sy.writtenHS.Commit+commitRecordEvery
	return urgent, routine
}

// metaInFlight reports whether a plan in flight writes a meta record.
func (l *Log) metaInFlight() bool {
	for _, p := range l.sy.inflight {
		if p.hasMeta {
			return true
		}
	}
	return false
}

// planMeta puts the current meta record into the plan: Run writes it into
// the meta file not holding the newest record, after everything else of
// the plan is durable (see the durability order at the top of this file).
func (l *Log) planMeta(p *SyncPlan) {
	sy := &l.sy
	sy.metaSeq++
	hs := l.hs
	hs.Commit = min(hs.Commit, l.lastIndex) // never past what this plan holds
	if plant.Enabled(plant.VoteNotPersisted) {
		hs.Vote = 0
	}
	p.meta = sy.meta.take()
	p.metaRec = metaState{seq: sy.metaSeq, hs: hs, snap: l.snap, startOffset: l.startOffset, logStart: l.logStart}
	sy.metaWritten = sy.metaVersion
	sy.writtenHS = hs
	p.hasMeta, p.snapIndex = true, l.snap.Index
}

// Run makes the plan durable: it fsyncs the captured files, then the
// directory, then writes the meta record and fsyncs it. It touches no Log
// state, so it may run on any goroutine.
func (p *SyncPlan) Run() error {
	if p.err != nil {
		return p.err
	}
	for _, f := range p.files {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if p.syncDir {
		if err := p.fsys.SyncDir(p.dir); err != nil {
			return err
		}
	}
	if p.meta == "" {
		return nil
	}
	// The meta record last, and written only now: before this point its
	// bytes could reach the disk ahead of the entries its commit index
	// names. A truncation while the plan ran lowers the cap.
	rec := p.metaRec
	rec.hs.Commit = min(rec.hs.Commit, p.limit.Load())
	return writeMetaRecord(p.fsys, path.Join(p.dir, p.meta), rec)
}

// FinishSync completes plan p on the reactor with Run's result. Plans
// finish in the order they were prepared: p must be the oldest in flight
// (anything else is ignored). On success DurableIndex advances to what the
// plan covered; on failure the log fails.
func (l *Log) FinishSync(p *SyncPlan, err error) {
	sy := &l.sy
	if p == nil || len(sy.inflight) == 0 || p != sy.inflight[0] {
		if p != nil && slices.Contains(sy.inflight, p) {
			assert.Failf("logstore %s: plan %d finished before plan %d", l.dir, p.seq, sy.inflight[0].seq)
		}
		return
	}
	sy.inflight[0] = nil
	sy.inflight = sy.inflight[1:]
	if len(sy.inflight) == 0 {
		sy.inflight = nil
	}
	for _, f := range p.closeAfter {
		// A later plan in flight syncs it too: it closes it.
		if q := l.laterHolder(f); q != nil {
			q.closeAfter = append(q.closeAfter, f)
			continue
		}
		f.Close()
	}
	l.stats.Syncs++
	if l.opts.Clock != nil {
		l.stats.SyncLatencySum += l.monoNow() - p.startedMono
	}
	if err != nil {
		l.stats.SyncFailures++
		l.fail(err)
		l.collectGraves()
		return
	}
	if l.failed != nil {
		// An earlier plan failed: nothing after it counts as durable.
		l.collectGraves()
		return
	}
	sy.durableIndex = max(sy.durableIndex, min(p.lastIndex, p.limit.Load()))
	sy.durablePlan = p.seq
	if p.hasMeta {
		sy.durableSnapIndex = p.snapIndex
		sy.durableHS = p.metaRec.hs
		sy.durableHS.Commit = min(sy.durableHS.Commit, p.limit.Load())
	}
	l.collectGraves()
}

// laterHolder returns the newest plan in flight that syncs f, or nil.
func (l *Log) laterHolder(f File) *SyncPlan {
	for i := len(l.sy.inflight) - 1; i >= 0; i-- {
		if slices.Contains(l.sy.inflight[i].files, f) {
			return l.sy.inflight[i]
		}
	}
	return nil
}

// Sync is PrepareSync, Run and FinishSync in a row. It returns
// ErrSyncInFlight if another plan is in flight.
func (l *Log) Sync() error {
	if len(l.sy.inflight) > 0 {
		return ErrSyncInFlight
	}
	p := l.PrepareSync()
	if p == nil {
		return l.failed
	}
	err := p.Run()
	l.FinishSync(p, err)
	if err != nil {
		return l.failed
	}
	return nil
}

// lowerDurable records that the log's content above index changed: neither
// the current durable index nor a plan in flight may count past it.
func (l *Log) lowerDurable(index uint64) {
	l.sy.durableIndex = min(l.sy.durableIndex, index)
	for _, p := range l.sy.inflight {
		p.limit.Store(min(p.limit.Load(), index))
	}
}
