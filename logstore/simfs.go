package logstore

// SimFS is an in-memory FS that can crash, for the simulator and for tests.
//
// The model. Every file is an inode holding its current bytes (what reads
// see) and the list of operations applied to it since its last Sync, in
// order: writes (the appended bytes) and truncates (the bytes a shrinking
// truncate removed). The durable contents are the current ones with every
// pending operation undone. Every directory holds its current entries, its
// durable entries (as of its last SyncDir) and the namespace operations since
// then (create, remove, rename), in order.
//
// A crash kills every open File (later use returns ErrClosed) and, for every
// directory reachable after the crash (walked in name order, so the seeded
// choices are deterministic), keeps a prefix of its pending namespace
// operations on top of its durable entries; then for every reachable file
// keeps a prefix of its pending operations on top of its durable bytes. In
// CrashRandom mode the prefix length is drawn uniformly and the last kept
// write is torn (cut to a shorter prefix of itself) half of the time. Keeping
// a prefix, never a subset, matches what journaling file systems give in
// practice; anything weaker than this is a disk that lies, which FlipBit and
// TruncateFile model separately.
//
// What it does not model: renames across directories (refused: their
// crash behaviour would need two directories' syncs, and the log never does
// them), holes and zero-filled extents after a crash, fsync errors that drop
// dirty pages (an injected Sync failure leaves the pending operations as
// they were).
//
// SimFS is safe for concurrent use (one mutex), so a test may run a
// SyncPlan on another goroutine. Randomness comes only from the *rand.Rand
// given to NewSimFS, and is drawn only under the mutex.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"path"
	"sort"
	"strings"
	"sync"
)

// Op names a file-system operation, for fault injection.
type Op uint8

// Operations that faults can be injected into.
const (
	OpCreate Op = iota + 1
	OpOpen
	OpRemove
	OpRename
	OpList
	OpMkdirAll
	OpSyncDir
	OpRead
	OpWrite
	OpSync
	OpTruncate
	opCount
)

var opNames = [...]string{"", "create", "open", "remove", "rename", "list", "mkdirall",
	"syncdir", "read", "write", "sync", "truncate"}

func (o Op) String() string {
	if o == 0 || o >= opCount {
		return fmt.Sprintf("op(%d)", uint8(o))
	}
	return opNames[o]
}

// ParseOp returns the Op named s (as Op.String prints it).
func ParseOp(s string) (Op, bool) {
	for i := Op(1); i < opCount; i++ {
		if opNames[i] == s {
			return i, true
		}
	}
	return 0, false
}

// CrashMode says how much unsynced state a crash keeps.
type CrashMode uint8

// Crash modes.
const (
	// CrashRandom keeps a seeded random prefix of each file's and each
	// directory's pending operations, tearing the last kept write half of
	// the time.
	CrashRandom CrashMode = iota
	// CrashLoseAll keeps nothing that was not synced: a power cut right
	// after the last sync.
	CrashLoseAll
	// CrashKeepAll keeps every pending operation: a process crash that the
	// operating system survives.
	CrashKeepAll
	// CrashTornLast keeps every pending operation but tears each file's last
	// pending write in half (when its last pending operation is a write).
	CrashTornLast
)

var errCrossDir = errors.New("logstore: SimFS does not rename across directories")

// SimFS is the simulated, crashable FS. See the model at the top of this file.
type SimFS struct {
	mu        sync.Mutex
	rng       *rand.Rand
	root      *simNode
	crashes   uint64 // handles opened before the last crash are dead
	failNext  []injectedFault
	failProb  [opCount]float64
	syncCount int64
	// full, lieProb, lies, noSpaceHits and injected: simfs_faults.go.
	full        bool
	lieProb     float64
	lies        int64
	lieSegs     bool                   // lies only on segment files (SetLyingSegments)
	mayLose     func(name string) bool // may a lost lie stand (SetLyingSegments)
	lostLies    []liedFile             // files whose lies the last crash lost
	lieFate     lieCounts
	noSpaceHits int64
	injected    [opCount]int64
}

type injectedFault struct {
	op   Op
	name string // "" matches any name
	err  error
}

// simNode is a file or a directory.
//
// Invariant (files): undoing pending from newest to oldest on data yields
// the durable contents. Invariant (dirs): replaying nsPending in order on
// durable yields children.
type simNode struct {
	isDir bool

	data    []byte
	pending []fileOp
	// lied is how many of pending a lying Sync claimed durable
	// (simfs_faults.go); 0 after an honest Sync.
	lied int

	children  map[string]*simNode
	durable   map[string]*simNode
	nsPending []nsOp
}

// fileOp is one unsynced file operation.
type fileOp struct {
	isTrunc   bool
	write     []byte // bytes appended (a copy)
	truncFrom int64  // size before the truncate
	truncTo   int64
	cut       []byte // bytes a shrinking truncate removed
}

// nsOp is one unsynced namespace operation: entry name now points to node
// (nil: removed); a rename also removes from.
type nsOp struct {
	name string
	node *simNode
	from string
}

func (op nsOp) apply(m map[string]*simNode) {
	if op.from != "" {
		delete(m, op.from)
	}
	if op.node == nil {
		delete(m, op.name)
		return
	}
	m[op.name] = op.node
}

func newDirNode() *simNode {
	return &simNode{isDir: true, children: map[string]*simNode{}, durable: map[string]*simNode{}}
}

// NewSimFS returns an empty SimFS (its root directory exists and is durable)
// whose crashes and probabilistic faults draw from rng.
func NewSimFS(rng *rand.Rand) *SimFS {
	return &SimFS{rng: rng, root: newDirNode()}
}

// FailNext makes the next operation op on name (any name if name is "")
// fail with err (ErrInjected if err is nil). An injected failure has no
// effect on the file system. Several may be queued; they match in order.
func (f *SimFS) FailNext(op Op, name string, err error) {
	if err == nil {
		err = ErrInjected
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext = append(f.failNext, injectedFault{op: op, name: cleanName(name), err: err})
}

// SetFailProb makes every operation op fail with ErrInjected with
// probability p (0 turns it off), drawn from the FS's rng.
func (f *SimFS) SetFailProb(op Op, p float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if op > 0 && op < opCount {
		f.failProb[op] = p
	}
}

// fault returns the injected error for op on name, if any. Caller holds mu.
func (f *SimFS) fault(op Op, name string) error {
	for i, inj := range f.failNext {
		if inj.op == op && (inj.name == "" || inj.name == name) {
			f.failNext = append(f.failNext[:i], f.failNext[i+1:]...)
			f.injected[op]++
			return &fs.PathError{Op: op.String(), Path: name, Err: inj.err}
		}
	}
	if p := f.failProb[op]; p > 0 && f.rng.Float64() < p {
		f.injected[op]++
		return &fs.PathError{Op: op.String(), Path: name, Err: ErrInjected}
	}
	return nil
}

func cleanName(name string) string {
	c := path.Clean("/" + name)
	return strings.TrimPrefix(c, "/")
}

func splitName(name string) []string {
	c := cleanName(name)
	if c == "" {
		return nil
	}
	return strings.Split(c, "/")
}

// lookup finds the node at name. Caller holds mu.
func (f *SimFS) lookup(name string) (*simNode, bool) {
	n := f.root
	for _, part := range splitName(name) {
		if !n.isDir {
			return nil, false
		}
		c, ok := n.children[part]
		if !ok {
			return nil, false
		}
		n = c
	}
	return n, true
}

// parent finds the directory holding name and name's last element.
func (f *SimFS) parent(op, name string) (*simNode, string, error) {
	parts := splitName(name)
	if len(parts) == 0 {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	dir, ok := f.lookup(strings.Join(parts[:len(parts)-1], "/"))
	if !ok || !dir.isDir {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: ErrNotExist}
	}
	return dir, parts[len(parts)-1], nil
}

// Create implements FS.
func (f *SimFS) Create(name string) (File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name = cleanName(name)
	if err := f.fault(OpCreate, name); err != nil {
		return nil, err
	}
	if err := f.noSpace("create", name); err != nil {
		return nil, err
	}
	dir, base, err := f.parent("create", name)
	if err != nil {
		return nil, err
	}
	if _, ok := dir.children[base]; ok {
		return nil, &fs.PathError{Op: "create", Path: name, Err: ErrExist}
	}
	n := &simNode{}
	op := nsOp{name: base, node: n}
	op.apply(dir.children)
	dir.nsPending = append(dir.nsPending, op)
	return &simFile{fs: f, node: n, name: name, crashes: f.crashes}, nil
}

// Open implements FS.
func (f *SimFS) Open(name string) (File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name = cleanName(name)
	if err := f.fault(OpOpen, name); err != nil {
		return nil, err
	}
	n, ok := f.lookup(name)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: ErrNotExist}
	}
	if n.isDir {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	return &simFile{fs: f, node: n, name: name, crashes: f.crashes}, nil
}

// Remove implements FS.
func (f *SimFS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	name = cleanName(name)
	if err := f.fault(OpRemove, name); err != nil {
		return err
	}
	dir, base, err := f.parent("remove", name)
	if err != nil {
		return err
	}
	n, ok := dir.children[base]
	if !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: ErrNotExist}
	}
	if n.isDir && len(n.children) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
	}
	op := nsOp{name: base}
	op.apply(dir.children)
	dir.nsPending = append(dir.nsPending, op)
	return nil
}

// Rename implements FS, within one directory only.
func (f *SimFS) Rename(oldname, newname string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	oldname, newname = cleanName(oldname), cleanName(newname)
	if err := f.fault(OpRename, oldname); err != nil {
		return err
	}
	odir, obase, err := f.parent("rename", oldname)
	if err != nil {
		return err
	}
	ndir, nbase, err := f.parent("rename", newname)
	if err != nil {
		return err
	}
	if odir != ndir {
		return &fs.PathError{Op: "rename", Path: oldname, Err: errCrossDir}
	}
	n, ok := odir.children[obase]
	if !ok {
		return &fs.PathError{Op: "rename", Path: oldname, Err: ErrNotExist}
	}
	if obase == nbase {
		return nil
	}
	if dst, ok := odir.children[nbase]; ok && dst.isDir {
		return &fs.PathError{Op: "rename", Path: newname, Err: ErrExist}
	}
	op := nsOp{name: nbase, node: n, from: obase}
	op.apply(odir.children)
	odir.nsPending = append(odir.nsPending, op)
	return nil
}

// List implements FS.
func (f *SimFS) List(dir string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir = cleanName(dir)
	if err := f.fault(OpList, dir); err != nil {
		return nil, err
	}
	n, ok := f.lookup(dir)
	if !ok || !n.isDir {
		return nil, &fs.PathError{Op: "list", Path: dir, Err: ErrNotExist}
	}
	return sortedNames(n.children), nil
}

func sortedNames(m map[string]*simNode) []string {
	names := make([]string, 0, len(m))
	//floe:unordered the names are sorted below
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// MkdirAll implements FS.
func (f *SimFS) MkdirAll(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir = cleanName(dir)
	if err := f.fault(OpMkdirAll, dir); err != nil {
		return err
	}
	n := f.root
	for _, part := range splitName(dir) {
		c, ok := n.children[part]
		if ok && !c.isDir {
			return &fs.PathError{Op: "mkdirall", Path: dir, Err: ErrExist}
		}
		if !ok {
			c = newDirNode()
			op := nsOp{name: part, node: c}
			op.apply(n.children)
			n.nsPending = append(n.nsPending, op)
		}
		n = c
	}
	return nil
}

// SyncDir implements FS.
func (f *SimFS) SyncDir(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir = cleanName(dir)
	if err := f.fault(OpSyncDir, dir); err != nil {
		return err
	}
	n, ok := f.lookup(dir)
	if !ok || !n.isDir {
		return &fs.PathError{Op: "syncdir", Path: dir, Err: ErrNotExist}
	}
	// The pending operations replayed on the durable entries give the
	// current ones (simNode's invariant), at the cost of the operations
	// since the last SyncDir rather than of the whole directory: a
	// compacted partition's directory holds every segment, and the
	// cleaner syncs it once per segment it rewrites.
	for _, op := range n.nsPending {
		op.apply(n.durable)
	}
	n.nsPending = nil
	f.syncCount++
	return nil
}

func cloneEntries(m map[string]*simNode) map[string]*simNode {
	c := make(map[string]*simNode, len(m))
	//floe:unordered a copy of a map is the same whatever the order
	for k, v := range m {
		c[k] = v
	}
	return c
}

// Crash crashes the FS in CrashRandom mode.
func (f *SimFS) Crash() { f.CrashWith(CrashRandom) }

// CrashWith crashes the FS: every open File dies, and unsynced state
// survives as mode says (see the model at the top of this file).
func (f *SimFS) CrashWith(mode CrashMode) {
	f.mu.Lock()
	f.crashes++
	f.crashDir(f.root, "", mode, map[*simNode]bool{f.root: true})
	lost := f.lostLies
	f.lostLies = nil
	f.mu.Unlock()
	f.resolveLies(lost) // outside the lock: it asks the simulator
}

// Wipe empties the FS, durable state and all, as a disk replaced by a new
// one: the root directory stays, nothing else. Call it on a crashed FS
// (open Files of the old disk are dead).
func (f *SimFS) Wipe() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.root = newDirNode()
	f.lostLies = nil
}

// keepCount draws how many of n pending operations survive.
func (f *SimFS) keepCount(n int, mode CrashMode) int {
	switch mode {
	case CrashLoseAll:
		return 0
	case CrashRandom:
		if n == 0 {
			return 0
		}
		return f.rng.Intn(n + 1)
	default:
		return n
	}
}

func (f *SimFS) crashDir(d *simNode, dir string, mode CrashMode, seen map[*simNode]bool) {
	m := cloneEntries(d.durable)
	for _, op := range d.nsPending[:f.keepCount(len(d.nsPending), mode)] {
		op.apply(m)
	}
	d.children, d.durable, d.nsPending = m, cloneEntries(m), nil
	for _, name := range sortedNames(m) {
		c := m[name]
		if seen[c] {
			continue
		}
		seen[c] = true
		switch {
		case c.isDir:
			f.crashDir(c, path.Join(dir, name), mode, seen)
		case c.lied > 0 && f.mayLose != nil:
			honest := append([]byte(nil), c.bytesBefore(c.lied)...)
			f.crashFile(c, mode)
			f.lostLies = append(f.lostLies, liedFile{name: path.Join(dir, name), node: c, honest: honest})
		default:
			f.crashFile(c, mode)
		}
	}
}

func (f *SimFS) crashFile(n *simNode, mode CrashMode) {
	if len(n.pending) == 0 {
		// Nothing unsynced: the file stays as it is (keepCount draws
		// nothing for no operations), without copying it.
		n.lied = 0
		return
	}
	// The surviving contents are built in place, on top of the durable
	// bytes: those are a prefix of n.data's array (or, past an undone
	// shrinking truncate, a fresh array of their own), and what follows
	// them there is only the file's current contents, which the crash
	// replaces. The kept operations' bytes (write, cut) are copies of
	// their own, so writing over n.data's tail never reads what it
	// overwrites, and each kept write costs its own length, not the
	// file's (a copy of the whole file per kept write was quadratic).
	data := n.durableBytes()
	k := f.keepCount(len(n.pending), mode)
	for i, op := range n.pending[:k] {
		if op.isTrunc {
			data = truncateBytes(data, op.truncTo)
			continue
		}
		w := op.write
		if i == k-1 && len(w) > 0 {
			switch {
			case mode == CrashTornLast && k == len(n.pending):
				w = w[:len(w)/2]
			case mode == CrashRandom && f.rng.Intn(2) == 0:
				w = w[:f.rng.Intn(len(w))]
			}
		}
		data = append(data, w...)
	}
	n.data = data
	n.pending, n.lied = nil, 0
}

// durableBytes undoes every pending operation, newest first. The result may
// share memory with n.data; callers copy before keeping it.
func (n *simNode) durableBytes() []byte { return n.bytesBefore(0) }

// bytesBefore undoes the pending operations from the k-th on, newest
// first: the contents after the first k. The result may share memory with
// n.data; callers copy before keeping it.
func (n *simNode) bytesBefore(k int) []byte {
	data := n.data
	for i := len(n.pending) - 1; i >= k; i-- {
		op := n.pending[i]
		switch {
		case !op.isTrunc:
			data = data[:len(data)-len(op.write)]
		case op.truncTo < op.truncFrom:
			data = append(data[:op.truncTo:op.truncTo], op.cut...)
		default:
			data = data[:op.truncFrom]
		}
	}
	return data
}

// truncateBytes cuts data to size bytes or extends it with zeros. It keeps
// data's array and its spare capacity (so the next append need not copy
// the whole file): the caller must own data's array, past len(data) too.
// Everything that keeps file bytes (pending operations, readers, the
// honest contents of a lie) holds a copy of its own.
func truncateBytes(data []byte, size int64) []byte {
	if size <= int64(len(data)) {
		return data[:size]
	}
	return append(data, make([]byte, size-int64(len(data)))...)
}

// FlipBit flips one bit of name's contents at byte off, as media corruption
// would. It is aimed at synced data: if the byte belongs to an unsynced
// write, a later crash may bring the unflipped byte back.
func (f *SimFS) FlipBit(name string, off int64, bit uint) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.lookup(cleanName(name))
	if !ok || n.isDir {
		return &fs.PathError{Op: "flipbit", Path: name, Err: ErrNotExist}
	}
	if off < 0 || off >= int64(len(n.data)) || bit > 7 {
		return &fs.PathError{Op: "flipbit", Path: name, Err: fs.ErrInvalid}
	}
	n.data[off] ^= 1 << bit
	return nil
}

// TruncateFile cuts name's contents to size bytes, as media damage would:
// the cut contents become the file's durable state and its pending
// operations are forgotten.
func (f *SimFS) TruncateFile(name string, size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.lookup(cleanName(name))
	if !ok || n.isDir {
		return &fs.PathError{Op: "truncatefile", Path: name, Err: ErrNotExist}
	}
	if size < 0 || size > int64(len(n.data)) {
		return &fs.PathError{Op: "truncatefile", Path: name, Err: fs.ErrInvalid}
	}
	n.data = append([]byte(nil), n.data[:size]...)
	n.pending, n.lied = nil, 0
	return nil
}

// Exists reports whether name exists now (durably or not).
func (f *SimFS) Exists(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.lookup(cleanName(name))
	return ok
}

// ReadFile returns name's current contents, unsynced writes included.
func (f *SimFS) ReadFile(name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.lookup(cleanName(name))
	if !ok || n.isDir {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: ErrNotExist}
	}
	return append([]byte(nil), n.data...), nil
}

// ReadDurable returns the contents name's file would have after a
// CrashLoseAll, assuming its directory entry survives.
func (f *SimFS) ReadDurable(name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.lookup(cleanName(name))
	if !ok || n.isDir {
		return nil, &fs.PathError{Op: "readdurable", Path: name, Err: ErrNotExist}
	}
	return append([]byte(nil), n.durableBytes()...), nil
}

// SyncCount returns how many File.Sync and SyncDir calls have succeeded.
func (f *SimFS) SyncCount() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncCount
}

// simFile is an open SimFS file. It refers to the inode, not the name: like
// POSIX, it keeps working after a rename or remove, until Close or a crash.
type simFile struct {
	fs      *SimFS
	node    *simNode
	name    string
	crashes uint64
	closed  bool
}

// check returns ErrClosed for a closed handle or one from before a crash.
// Caller holds fs.mu.
func (h *simFile) check(op string) error {
	if h.closed || h.crashes != h.fs.crashes {
		return &fs.PathError{Op: op, Path: h.name, Err: ErrClosed}
	}
	return nil
}

func (h *simFile) ReadAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.check("read"); err != nil {
		return 0, err
	}
	if err := h.fs.fault(OpRead, h.name); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: h.name, Err: fs.ErrInvalid}
	}
	if off >= int64(len(h.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, h.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (h *simFile) Write(p []byte) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.check("write"); err != nil {
		return 0, err
	}
	if err := h.fs.fault(OpWrite, h.name); err != nil {
		return 0, err
	}
	if err := h.fs.noSpace("write", h.name); err != nil {
		return 0, err
	}
	w := append([]byte(nil), p...)
	h.node.data = append(h.node.data, w...)
	h.node.pending = append(h.node.pending, fileOp{write: w})
	return len(p), nil
}

func (h *simFile) Sync() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.check("sync"); err != nil {
		return err
	}
	if err := h.fs.fault(OpSync, h.name); err != nil {
		return err
	}
	if h.fs.lie(h.name) {
		h.node.lied = len(h.node.pending) // a lying fsync: nothing became durable
		return nil
	}
	h.node.pending, h.node.lied = nil, 0
	h.fs.syncCount++
	return nil
}

func (h *simFile) Truncate(size int64) error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.check("truncate"); err != nil {
		return err
	}
	if err := h.fs.fault(OpTruncate, h.name); err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: h.name, Err: fs.ErrInvalid}
	}
	n := h.node
	op := fileOp{isTrunc: true, truncFrom: int64(len(n.data)), truncTo: size}
	if size < int64(len(n.data)) {
		op.cut = append([]byte(nil), n.data[size:]...)
	}
	n.data = truncateBytes(n.data, size)
	n.pending = append(n.pending, op)
	return nil
}

func (h *simFile) Size() (int64, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.check("size"); err != nil {
		return 0, err
	}
	return int64(len(h.node.data)), nil
}

func (h *simFile) Close() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.check("close"); err != nil {
		return err
	}
	h.closed = true
	return nil
}

// CommittedPrefix returns how many leading bytes of segment file name (in
// the log directory dir) hold entries at or below the commit index the
// log's newest valid meta record holds. A fault that cuts the file back
// below it is a loss recovery can see (node/replicas.go, recoveryFence); a
// cut above it looks like a torn write, and the simulator does not inject
// one (docs/testing.md). It returns 0 if the file holds no such entry.
func (f *SimFS) CommittedPrefix(dir, name string) int64 {
	b, err := f.ReadFile(path.Join(dir, name))
	if err != nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.committedPrefix(dir, b)
}

// committedPrefix is CommittedPrefix of segment contents b of the log in
// dir. Caller holds mu.
func (f *SimFS) committedPrefix(dir string, b []byte) int64 {
	var newest metaState
	found := false
	for _, mn := range metaNames {
		n, ok := f.lookup(cleanName(path.Join(dir, mn)))
		if !ok || n.isDir {
			continue
		}
		if m, err := decodeMetaFile(n.data); err == nil && (!found || m.seq > newest.seq) {
			newest, found = m, true
		}
	}
	if !found {
		return 0
	}
	commit := newest.hs.Commit
	var end int64
	for pos := int64(0); pos+entryHeaderBytes <= int64(len(b)); {
		h, err := parseEntryHeader(b[pos:], 1<<30)
		if err != nil || pos+h.size() > int64(len(b)) || h.index > commit {
			break
		}
		pos += h.size()
		end = pos
	}
	return end
}

// FlipTarget returns the byte of segment file name (in the log directory
// dir) a fault flipping a bit at off should flip so that recovery can see
// the damage: off itself, unless off lies before a sector boundary inside
// an entry above the commit index the log's newest meta record holds,
// whose own bytes from that boundary to the end of the file are zeros, 4
// or more of them. Such damage reads exactly as a write torn into zeroed
// sectors (recovery_torn.go: some bytes in place of 32 or more zero bits
// always match the CRC), a loss above the recorded commit that nothing on
// one disk tells apart, outside the fault model (docs/testing.md); the
// fault then flips the entry's last byte instead (damage recovery sees:
// the zeros no longer reach the end of the file). Fewer than 4 zero bytes
// recovery tells apart (tornTailCanMatch), so those flips stand.
func (f *SimFS) FlipTarget(dir, name string, off int64) int64 {
	b, err := f.ReadFile(path.Join(dir, name))
	if err != nil || off < 0 || off >= int64(len(b)) {
		return off
	}
	f.mu.Lock()
	committed := f.committedPrefix(dir, b)
	f.mu.Unlock()
	z := int64(len(b))
	for z > 0 && b[z-1] == 0 {
		z--
	}
	boundary := (z + sectorBytes - 1) / sectorBytes * sectorBytes
	if off < committed || off >= boundary {
		return off
	}
	for pos := committed; pos+entryHeaderBytes <= int64(len(b)); {
		h, err := parseEntryHeader(b[pos:], 1<<30)
		if err != nil || pos+h.size() > int64(len(b)) {
			return off
		}
		end := pos + h.size()
		if off < end {
			if pos < boundary && end-boundary >= 4 {
				return end - 1
			}
			return off
		}
		pos = end
	}
	return off
}
