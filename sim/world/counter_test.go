package world

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"
	"time"

	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
)

// counterNode is the simulator's example node: a replicated counter.
//
// Every tick (tickEvery plus seeded jitter) it increments its own counter and
// appends the value to its file, syncing every syncEvery ticks, then gossips the largest value
// it knows to every peer. Peers keep the max. On boot it recovers its counter
// from the file: the last record that is whole and checksums right.
//
// File format, one record per increment:
//
//	+----------------+-----------------+
//	| value: uint64  | crc32c(value)   |   12 bytes, big-endian
//	+----------------+-----------------+
//
// A crash may tear the last write, so recovery stops at the first short or
// bad record and truncates the file there before appending again.
type counterNode struct {
	env   Env
	peers []netx.NodeID
	file  logstore.File // nil when the disk failed; the node stops persisting
	// validBytes is the length of the file's whole records written so far
	// (synced or not): where a failed write is cut back to.
	validBytes int64
	// own is this node's counter. Invariant: own >= the last value whose
	// Sync returned nil, in this or any earlier incarnation.
	own uint64
	// seen is the largest counter heard of, own included.
	seen uint64
	// onSynced, if set, learns each value once its Sync returned nil.
	onSynced func(id netx.NodeID, v uint64)
}

const (
	counterDir      = "counter"
	counterPath     = counterDir + "/value.log"
	counterRecBytes = 12
	tickEvery       = 10 * time.Millisecond
	tickJitterMax   = 5 * time.Millisecond
	syncEvery       = 3 // ticks per Sync
	gossipTag       = 'g'
	gossipBytes     = 9
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// newCounterNode boots a counter: recover, then start ticking.
func newCounterNode(env Env, peers []netx.NodeID, onSynced func(netx.NodeID, uint64)) *counterNode {
	n := &counterNode{env: env, onSynced: onSynced}
	for _, p := range peers {
		if p != env.ID {
			n.peers = append(n.peers, p)
		}
	}
	if err := n.recover(); err != nil {
		env.Tracef("recover failed: %v; running without a disk", err)
		n.file = nil
	}
	n.seen = n.own
	env.Tracef("boot own=%d", n.own)
	n.scheduleTick()
	return n
}

// recover opens (or creates) the counter file and loads its last good value.
func (n *counterNode) recover() error {
	fs := n.env.FS
	f, err := fs.Open(counterPath)
	if errors.Is(err, logstore.ErrNotExist) {
		return n.create()
	}
	if err != nil {
		return err
	}
	n.file = f
	size, err := f.Size()
	if err != nil {
		return err
	}
	buf := make([]byte, size)
	if m, err := f.ReadAt(buf, 0); m < len(buf) {
		return fmt.Errorf("reading %d bytes of %s: got %d: %w", size, counterPath, m, err)
	}
	n.own, n.validBytes = lastGoodRecord(buf)
	if n.validBytes < size {
		n.env.Tracef("recover: dropping %d torn bytes", size-n.validBytes)
		if err := f.Truncate(n.validBytes); err != nil {
			return err
		}
		return f.Sync()
	}
	return nil
}

// create makes an empty counter file and makes its existence durable.
func (n *counterNode) create() error {
	fs := n.env.FS
	if err := fs.MkdirAll(counterDir); err != nil {
		return err
	}
	f, err := fs.Create(counterPath)
	if err != nil {
		return err
	}
	n.file = f
	if err := fs.SyncDir(counterDir); err != nil {
		return err
	}
	return fs.SyncDir(".")
}

// lastGoodRecord scans records and returns the last good value and the
// length of the good prefix.
func lastGoodRecord(buf []byte) (value uint64, validBytes int64) {
	for off := 0; off+counterRecBytes <= len(buf); off += counterRecBytes {
		rec := buf[off : off+counterRecBytes]
		if crc32.Checksum(rec[:8], castagnoli) != binary.BigEndian.Uint32(rec[8:]) {
			break
		}
		value, validBytes = binary.BigEndian.Uint64(rec[:8]), int64(off+counterRecBytes)
	}
	return value, validBytes
}

func (n *counterNode) scheduleTick() {
	jitter := time.Duration(n.env.Rand.Int63n(int64(tickJitterMax)))
	n.env.Sched.After(tickEvery+jitter, n.tick)
}

func (n *counterNode) tick() {
	n.own++
	n.seen = max(n.seen, n.own)
	n.persist()
	n.env.Tracef("tick own=%d seen=%d", n.own, n.seen)
	for _, p := range n.peers {
		msg := make([]byte, gossipBytes) // one each: the transport owns it
		msg[0] = gossipTag
		binary.BigEndian.PutUint64(msg[1:], n.seen)
		n.env.Net.Send(p, msg)
	}
	n.scheduleTick()
}

// persist appends own and, every syncEvery ticks, syncs the file (a small
// group commit, so a crash has unsynced records to lose or tear). On an
// error it cuts the file back to its last good length, so a half-written
// record never sits under later ones.
func (n *counterNode) persist() {
	if n.file == nil {
		return
	}
	var rec [counterRecBytes]byte
	binary.BigEndian.PutUint64(rec[:8], n.own)
	binary.BigEndian.PutUint32(rec[8:], crc32.Checksum(rec[:8], castagnoli))
	if _, err := n.file.Write(rec[:]); err != nil {
		n.repair(err)
		return
	}
	n.validBytes += counterRecBytes
	if n.own%syncEvery != 0 {
		return
	}
	if err := n.file.Sync(); err != nil {
		n.repair(err)
		return
	}
	if n.onSynced != nil {
		n.onSynced(n.env.ID, n.own)
	}
}

func (n *counterNode) repair(cause error) {
	n.env.Tracef("persist failed: %v", cause)
	if err := n.file.Truncate(n.validBytes); err != nil {
		n.env.Tracef("repair failed: %v; no more persisting", err)
		n.file = nil
	}
}

// Handle keeps the max of gossiped values; anything malformed is ignored.
func (n *counterNode) Handle(from netx.NodeID, msg []byte) {
	if len(msg) != gossipBytes || msg[0] != gossipTag {
		n.env.Tracef("ignoring a bad message from n%d", from)
		return
	}
	n.seen = max(n.seen, binary.BigEndian.Uint64(msg[1:]))
}

func (n *counterNode) Stop() {
	if n.file != nil {
		_ = n.file.Close()
		n.file = nil
	}
}

func TestCounterLastGoodRecord(t *testing.T) {
	rec := func(v uint64) []byte {
		var b [counterRecBytes]byte
		binary.BigEndian.PutUint64(b[:8], v)
		binary.BigEndian.PutUint32(b[8:], crc32.Checksum(b[:8], castagnoli))
		return b[:]
	}
	join := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	corrupt := rec(2)
	corrupt[3] ^= 0x10
	tests := []struct {
		name      string
		buf       []byte
		value     uint64
		goodBytes int64
	}{
		{"empty", nil, 0, 0},
		{"whole", join(rec(1), rec(2), rec(3)), 3, 36},
		{"torn tail", join(rec(1), rec(2), rec(3)[:5]), 2, 24},
		{"bad checksum stops the scan", join(rec(1), corrupt, rec(3)), 1, 12},
		{"short file", rec(1)[:11], 0, 0},
	}
	for _, tt := range tests {
		v, n := lastGoodRecord(tt.buf)
		if v != tt.value || n != tt.goodBytes {
			t.Errorf("%s: lastGoodRecord = (%d, %d), want (%d, %d)", tt.name, v, n, tt.value, tt.goodBytes)
		}
	}
}

// A power cut loses exactly the unsynced records; a process crash (the OS
// survives) loses none.
func TestCounterRecoversAcrossCrashes(t *testing.T) {
	for _, tt := range []struct {
		mode     logstore.CrashMode
		keepsAll bool
	}{
		{logstore.CrashLoseAll, false},
		{logstore.CrashKeepAll, true},
	} {
		var synced uint64
		w := New(Config{Seed: 1, Nodes: 1}, func(env Env) Instance {
			return newCounterNode(env, nil, func(_ netx.NodeID, v uint64) { synced = v })
		})
		// Stop between a sync and the next one, so some records are unsynced.
		if !w.RunUntil(func() bool { return w.Instance(1).(*counterNode).own == 3*syncEvery+1 }, time.Second) {
			t.Fatal("the counter did not tick")
		}
		own := w.Instance(1).(*counterNode).own
		w.CrashWith(1, tt.mode)
		w.Restart(1)
		got := w.Instance(1).(*counterNode).own
		want := synced
		if tt.keepsAll {
			want = own
		}
		if got != want || synced == own {
			t.Errorf("crash mode %s: recovered %d (own %d, synced %d), want %d",
				crashModeName(tt.mode), got, own, synced, want)
		}
	}
}
