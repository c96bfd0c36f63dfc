package logstore

import (
	"bytes"
	"math/rand"
	"testing"
)

// simModelFile is one file of the naive model of SimFS's file semantics
// that TestSimFSMatchesNaiveModel drives SimFS against. Nothing in it shares
// memory: every version of the file is a copy of its own.
type simModelFile struct {
	// versions[i] is the file after the first i pending operations:
	// versions[0] the durable contents, the last one the current ones.
	versions [][]byte
	ops      []simModelOp
	// lows[j] is how many leading bytes operation j left in place (the
	// size before a write; the smaller of the sizes around a truncate).
	lows []int
	lied int
}

type simModelOp struct {
	trunc bool
	w     []byte
	to    int
}

func (m *simModelFile) cur() []byte { return m.versions[len(m.versions)-1] }

func (m *simModelFile) push(op simModelOp, low int, next []byte) {
	m.ops = append(m.ops, op)
	m.lows = append(m.lows, low)
	m.versions = append(m.versions, next)
}

func (m *simModelFile) write(p []byte) {
	cur := m.cur()
	w := bytes.Clone(p)
	next := append(bytes.Clone(cur), w...)
	m.push(simModelOp{w: w}, len(cur), next)
}

func (m *simModelFile) truncate(size int) {
	cur := m.cur()
	next := make([]byte, size)
	copy(next, cur)
	m.push(simModelOp{trunc: true, to: size}, min(len(cur), size), next)
}

func (m *simModelFile) settle(data []byte) {
	m.versions, m.ops, m.lows, m.lied = [][]byte{data}, nil, nil, 0
}

// flip flips a bit of the current contents and of every earlier version
// that still holds the same byte on the medium: one no later operation
// cut away or wrote anew. (A write's bytes and a truncate's cut bytes are
// kept as they were written or cut: a crash replays a kept write with its
// unflipped bytes.)
func (m *simModelFile) flip(off int, bit uint) {
	shared := len(m.cur())
	for i := len(m.versions) - 1; i >= 0; i-- {
		if i < len(m.ops) {
			shared = min(shared, m.lows[i])
		}
		if off < shared {
			m.versions[i][off] ^= 1 << bit
		}
	}
}

// crash keeps the first k pending operations on top of the durable bytes,
// drawing from rng as SimFS does.
func (m *simModelFile) crash(rng *rand.Rand, mode CrashMode) {
	if len(m.ops) == 0 {
		m.lied = 0
		return
	}
	n := len(m.ops)
	k := n
	switch mode {
	case CrashLoseAll:
		k = 0
	case CrashRandom:
		k = rng.Intn(n + 1)
	}
	data := bytes.Clone(m.versions[0])
	for i, op := range m.ops[:k] {
		if op.trunc {
			next := make([]byte, op.to)
			copy(next, data)
			data = next
			continue
		}
		w := op.w
		if i == k-1 && len(w) > 0 {
			switch {
			case mode == CrashTornLast && k == n:
				w = w[:len(w)/2]
			case mode == CrashRandom && rng.Intn(2) == 0:
				w = w[:rng.Intn(len(w))]
			}
		}
		data = append(bytes.Clone(data), w...)
	}
	m.settle(data)
}

// TestSimFSMatchesNaiveModel drives SimFS and a naive model of its file
// semantics (every version a copy, nothing shared) with the same random
// writes, truncates, syncs (honest and lying), bit flips, media cuts and
// crashes of every mode, and compares every file's current and durable
// contents after each step. SimFS builds a crash's survivors in place and
// keeps a file's spare capacity after truncates and crashes; a byte shared
// where it must not be (a pending write or cut, a reader's copy, the tail
// a crash overwrites) shows here as a difference.
func TestSimFSMatchesNaiveModel(t *testing.T) {
	names := []string{"d/a", "d/b", "d/c"}
	modes := []CrashMode{CrashRandom, CrashRandom, CrashLoseAll, CrashKeepAll, CrashTornLast}
	for seed := int64(0); seed < 200; seed++ {
		fsys := NewSimFS(rand.New(rand.NewSource(seed)))
		mrng := rand.New(rand.NewSource(seed)) // the model's copy of the FS's draws
		fsys.SetLying(0.2)
		rng := rand.New(rand.NewSource(seed + 1_000_000)) // the test's own choices
		must(t, fsys.MkdirAll("d"))
		must(t, fsys.SyncDir(""))
		handles := map[string]File{}
		model := map[string]*simModelFile{}
		for _, name := range names {
			f, err := fsys.Create(name)
			must(t, err)
			handles[name] = f
			model[name] = &simModelFile{versions: [][]byte{nil}}
		}
		must(t, fsys.SyncDir("d"))
		reopen := func() {
			for _, name := range names {
				f, err := fsys.Open(name)
				must(t, err)
				handles[name] = f
			}
		}
		for step := 0; step < 300; step++ {
			name := names[rng.Intn(len(names))]
			h, m := handles[name], model[name]
			switch r := rng.Intn(100); {
			case r < 40:
				p := make([]byte, rng.Intn(40))
				rng.Read(p)
				if _, err := h.Write(p); err != nil {
					t.Fatal(err)
				}
				m.write(p)
				for i := range p {
					p[i] = 0xa5 // the caller's buffer is its own again
				}
			case r < 52:
				size := 0
				if n := len(m.cur()); n > 0 {
					size = rng.Intn(n + n/2 + 1)
				}
				must(t, h.Truncate(int64(size)))
				m.truncate(size)
			case r < 64:
				must(t, h.Sync())
				if mrng.Float64() < 0.2 {
					m.lied = len(m.ops)
				} else {
					m.settle(m.cur())
				}
			case r < 76:
				if n := len(m.cur()); n > 0 {
					off, bit := rng.Intn(n), uint(rng.Intn(8))
					must(t, fsys.FlipBit(name, int64(off), bit))
					m.flip(off, bit)
				}
			case r < 79:
				if n := len(m.cur()); n > 0 {
					size := rng.Intn(n + 1)
					must(t, fsys.TruncateFile(name, int64(size)))
					m.settle(bytes.Clone(m.cur()[:size]))
				}
			case r < 90:
				if n := len(m.cur()); n > 0 {
					off, ln := rng.Intn(n), rng.Intn(n+8)
					p := make([]byte, ln)
					got, _ := h.ReadAt(p, int64(off))
					if want := m.cur()[off:min(n, off+ln)]; !bytes.Equal(p[:got], want) {
						t.Fatalf("seed %d step %d: ReadAt(%s, %d, %d) = %x, want %x", seed, step, name, off, ln, p[:got], want)
					}
				}
			default:
				mode := modes[rng.Intn(len(modes))]
				fsys.CrashWith(mode)
				for _, n := range names { // the FS walks its files in name order
					model[n].crash(mrng, mode)
				}
				reopen()
			}
			for _, n := range names {
				cur, err := fsys.ReadFile(n)
				must(t, err)
				dur, err := fsys.ReadDurable(n)
				must(t, err)
				if want := model[n].cur(); !bytes.Equal(cur, want) {
					t.Fatalf("seed %d step %d: %s holds %x, want %x", seed, step, n, cur, want)
				}
				if want := model[n].versions[0]; !bytes.Equal(dur, want) {
					t.Fatalf("seed %d step %d: %s durable %x, want %x", seed, step, n, dur, want)
				}
				for i := range cur {
					cur[i] = 0x5a // copies: scribbling changes nothing
				}
				for i := range dur {
					dur[i] = 0x5a
				}
			}
		}
	}
}
