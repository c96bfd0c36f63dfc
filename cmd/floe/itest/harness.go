package itest

import (
	"errors"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary is the floe binary StartBroker runs unless WithBinary says
// otherwise. A TestMain sets it from Build.
var Binary string

// Bounds on waits. They are not speed assertions: they only turn a hang
// into a failure, and are generous for a shared two-core machine.
const (
	readyWaitMax = 60 * time.Second
	stopWaitMax  = 30 * time.Second
	logTailBytes = 6000
	// testWaitMax bounds a whole test that starts brokers (watchdog.go);
	// FLOE_ITEST_BOUND overrides it, and the long run (FLOE_ITEST_LONG=1)
	// allows testWaitMaxLong.
	testWaitMax     = 5 * time.Minute
	testWaitMaxLong = 30 * time.Minute
)

// Build compiles ./cmd/floe into dir and returns the binary's path. Call it
// once from TestMain: the go command caches the build, so later test
// binaries pay little.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "floe")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/floe-broker/floe/cmd/floe")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build floe: %v\n%s", err, out)
	}
	return bin, nil
}

// BuildTagged is Build with build tags (floe_itest: the test-only
// principal hook of node/runtime/principal_itest.go); the binary is named
// after the tags.
func BuildTagged(dir string, tags ...string) (string, error) {
	bin := filepath.Join(dir, "floe-"+strings.Join(tags, "-"))
	cmd := exec.Command("go", "build", "-tags", strings.Join(tags, ","), "-o", bin, "github.com/floe-broker/floe/cmd/floe")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -tags %s floe: %v\n%s", strings.Join(tags, ","), err, out)
	}
	return bin, nil
}

// BuildPlanted is Build with Floe's planted bugs compiled in (build tag
// floe_bugs, see internal/plant). Such a binary plants the bugs named in
// the environment variable FLOE_PLANT (comma-separated) when it starts:
// pass it with WithEnv.
func BuildPlanted(dir string) (string, error) { return BuildTagged(dir, "floe_bugs") }

// Option changes how StartBroker starts a broker.
type Option func(*brokerConfig)

type brokerConfig struct {
	binary    string
	dataDir   string
	kafkaAddr string
	listeners string // --listeners instead of --kafka-addr
	adminAddr string
	advertise string
	raftAddr  string
	peers     string
	nodeID    int
	logLevel  string
	flags     []string
	env       []string
	noWait    bool
}

// WithBinary runs the floe binary at path instead of Binary.
func WithBinary(path string) Option { return func(c *brokerConfig) { c.binary = path } }

// WithDataDir uses dir instead of a fresh t.TempDir().
func WithDataDir(dir string) Option { return func(c *brokerConfig) { c.dataDir = dir } }

// WithKafkaAddr listens for clients on addr instead of a free port.
func WithKafkaAddr(addr string) Option { return func(c *brokerConfig) { c.kafkaAddr = addr } }

// WithListeners runs the broker with --listeners spec
// ("NAME://host:port,...") instead of --kafka-addr; Broker.KafkaAddr is
// the first listener's address.
func WithListeners(spec string) Option { return func(c *brokerConfig) { c.listeners = spec } }

// WithAdvertisedAddr tells clients to connect to addr (a proxy in front of
// the broker, say) instead of the Kafka listen address.
func WithAdvertisedAddr(addr string) Option {
	return func(c *brokerConfig) { c.advertise = addr }
}

// WithNodeID sets --node-id (default 1).
func WithNodeID(id int) Option { return func(c *brokerConfig) { c.nodeID = id } }

// WithRaftAddr sets --raft-addr, the peer listen address (cluster mode).
func WithRaftAddr(addr string) Option { return func(c *brokerConfig) { c.raftAddr = addr } }

// WithPeers sets --peers, the initial voters: "1@host:port,2@host:port".
func WithPeers(peers string) Option { return func(c *brokerConfig) { c.peers = peers } }

// WithLogLevel sets --log-level (default warn).
func WithLogLevel(level string) Option { return func(c *brokerConfig) { c.logLevel = level } }

// WithFlags appends raw flags to the floe serve command line.
func WithFlags(args ...string) Option {
	return func(c *brokerConfig) { c.flags = append(c.flags, args...) }
}

// WithEnv adds environment variables ("NAME=value") to the broker's.
func WithEnv(kv ...string) Option {
	return func(c *brokerConfig) { c.env = append(c.env, kv...) }
}

// NoWait returns from StartBroker (and Restart) without waiting for
// /readyz: members of a cluster become ready only once a quorum runs.
func NoWait() Option { return func(c *brokerConfig) { c.noWait = true } }

// Broker is one `floe serve` process. Its addresses and data directory
// stay the same across Kill/Stop and Restart.
type Broker struct {
	KafkaAddr string // where clients connect (the listen address)
	AdminAddr string // HTTP: /metrics, /healthz, /readyz
	RaftAddr  string // peer address, "" for a single node outside cluster mode
	DataDir   string
	NodeID    int
	LogPath   string // the process's stdout and stderr, appended across restarts

	t   testing.TB
	cfg brokerConfig

	mu   sync.Mutex
	proc *process // nil while stopped
	// exits records how each run ended, in order: "exit status 0",
	// "signal: killed", ...
	exits []string
}

// process is one run of the broker.
type process struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed once cmd.Wait returned
	err  error         // cmd.Wait's result, set before done closes
}

// StartBroker starts `floe serve` on free local ports with a temporary data
// directory, waits until /readyz answers 200 (unless NoWait), and stops it
// with SIGTERM (SIGKILL after 30s) when the test ends. If the test failed,
// the broker's log tail goes to the test log. The test is bounded by its
// watchdog (watchdog.go): if it is still running after testWaitMax, the
// log tails of its brokers and every goroutine's stack are printed and the
// test binary fails at once.
func StartBroker(t testing.TB, opts ...Option) *Broker {
	t.Helper()
	cfg := brokerConfig{nodeID: 1, logLevel: "warn", binary: Binary}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.binary == "" {
		t.Fatal("itest: no floe binary: set itest.Binary from Build in TestMain, or pass WithBinary")
	}
	if cfg.dataDir == "" {
		cfg.dataDir = t.TempDir()
	}
	if cfg.listeners != "" {
		first, _, _ := strings.Cut(cfg.listeners, ",")
		_, cfg.kafkaAddr, _ = strings.Cut(first, "://")
	}
	if cfg.kafkaAddr == "" {
		cfg.kafkaAddr = FreeAddr(t)
	}
	if cfg.adminAddr == "" {
		cfg.adminAddr = FreeAddr(t)
	}
	b := &Broker{
		KafkaAddr: cfg.kafkaAddr, AdminAddr: cfg.adminAddr, RaftAddr: cfg.raftAddr,
		DataDir: cfg.dataDir, NodeID: cfg.nodeID,
		LogPath: filepath.Join(t.TempDir(), fmt.Sprintf("floe-%d.log", cfg.nodeID)),
		t:       t, cfg: cfg,
	}
	watch(t).add(b)
	t.Cleanup(func() {
		b.Stop()
		if t.Failed() {
			t.Logf("broker %d (%s) exits %v; log tail:\n%s", b.NodeID, b.KafkaAddr, b.Exits(), b.LogTail())
		}
	})
	b.Restart()
	return b
}

// StartCluster starts n brokers (node IDs 1..n) that form one cluster
// through --peers, waits until every one is ready, and stops them when the
// test ends. opts apply to every broker.
func StartCluster(t testing.TB, n int, opts ...Option) []*Broker {
	t.Helper()
	raftAddrs := make([]string, n)
	peers := make([]string, n)
	for i := range raftAddrs {
		raftAddrs[i] = FreeAddr(t)
		peers[i] = fmt.Sprintf("%d@%s", i+1, raftAddrs[i])
	}
	brokers := make([]*Broker, n)
	for i := range brokers {
		o := append([]Option{WithNodeID(i + 1), WithRaftAddr(raftAddrs[i]),
			WithPeers(strings.Join(peers, ","))}, opts...)
		brokers[i] = StartBroker(t, append(o, NoWait())...)
	}
	for _, b := range brokers {
		b.WaitReady()
	}
	return brokers
}

// FreeAddr returns a local address nobody listened on a moment ago and
// that this test process has not handed out before.
//
// Why not simply port 0: the kernel may give the same ephemeral port to
// two listeners that were closed in between, so a cluster's admin
// address once equalled another broker's Raft address ("bind: address
// already in use", CI of 2026-12-02). Ports are drawn instead from below
// the kernel's ephemeral range, where neither port-0 listeners nor the
// source ports of outgoing connections (any process's) land, and each
// is handed out at most once per process. The draw is seeded by the pid
// so that test binaries running side by side try different ports.
func FreeAddr(t testing.TB) string {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for try := 0; try < 200; try++ {
		port := portLow + portRand.Intn(portHigh-portLow)
		if portsGiven[port] {
			continue
		}
		portsGiven[port] = true
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // in use by someone else
		}
		ln.Close()
		return ln.Addr().String()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The port range FreeAddr draws from: below Linux's default ephemeral
// range (32768-60999) and above the well-known and registered services
// most machines run.
const (
	portLow  = 20000
	portHigh = 32000
)

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
	portRand   = rand.New(rand.NewSource(int64(os.Getpid()) ^ time.Now().UnixNano()))
)

func (b *Broker) args() []string {
	c := b.cfg
	args := []string{"serve", "--data-dir", c.dataDir, "--kafka-addr", c.kafkaAddr,
		"--admin-addr", c.adminAddr, "--node-id", strconv.Itoa(c.nodeID), "--log-level", c.logLevel}
	if c.listeners != "" {
		args[3], args[4] = "--listeners", c.listeners
	}
	if c.advertise != "" {
		args = append(args, "--advertise-kafka-addr", c.advertise)
	}
	if c.raftAddr != "" {
		args = append(args, "--raft-addr", c.raftAddr)
	}
	if c.peers != "" {
		args = append(args, "--peers", c.peers)
	}
	return append(args, c.flags...)
}

// Restart starts the broker again on the same data directory and
// addresses (it starts it the first time too). It fails the test if the
// broker is running.
func (b *Broker) Restart() {
	b.t.Helper()
	b.mu.Lock()
	running := b.proc != nil
	b.mu.Unlock()
	if running {
		b.t.Fatalf("broker %d: Restart while running", b.NodeID)
	}
	log, err := os.OpenFile(b.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		b.t.Fatal(err)
	}
	fmt.Fprintf(log, "### floe %s\n", strings.Join(b.args(), " "))
	cmd := exec.Command(b.cfg.binary, b.args()...)
	cmd.Stdout, cmd.Stderr = log, log
	if len(b.cfg.env) > 0 {
		cmd.Env = append(os.Environ(), b.cfg.env...)
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		b.t.Fatalf("start floe: %v", err)
	}
	p := &process{cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	b.mu.Lock()
	b.proc = p
	b.mu.Unlock()
	if !b.cfg.noWait {
		b.WaitReady()
	}
}

// WaitReady waits until /readyz answers 200. It fails the test if the
// process exits first or is not ready within a minute.
func (b *Broker) WaitReady() {
	b.t.Helper()
	b.mu.Lock()
	p := b.proc
	b.mu.Unlock()
	if p == nil {
		b.t.Fatalf("broker %d: WaitReady while stopped", b.NodeID)
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(readyWaitMax)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			b.t.Fatalf("broker %d exited while starting (%v); log:\n%s", b.NodeID, p.err, b.LogTail())
		default:
		}
		if resp, err := hc.Get("http://" + b.AdminAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	b.t.Fatalf("broker %d not ready after %v; log:\n%s", b.NodeID, readyWaitMax, b.LogTail())
}

// Kill crashes the broker with SIGKILL and waits for it to die: only what
// it had fsynced survives. Killing a stopped broker does nothing.
func (b *Broker) Kill() { b.signal(syscall.SIGKILL) }

// Stop asks the broker to shut down cleanly (SIGTERM) and waits; after 30s
// it kills it. Stopping a stopped broker does nothing.
func (b *Broker) Stop() { b.signal(syscall.SIGTERM) }

// Pause stops the process (SIGSTOP) without killing it; Resume continues.
func (b *Broker) Pause() { b.send(syscall.SIGSTOP) }

// Resume continues a paused broker (SIGCONT).
func (b *Broker) Resume() { b.send(syscall.SIGCONT) }

func (b *Broker) send(sig syscall.Signal) {
	b.mu.Lock()
	p := b.proc
	b.mu.Unlock()
	if p != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

func (b *Broker) signal(sig syscall.Signal) {
	b.mu.Lock()
	p := b.proc
	b.proc = nil
	b.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a paused broker cannot handle SIGTERM
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(stopWaitMax):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.log.Close()
	why := "exit status 0"
	if p.err != nil {
		why = p.err.Error()
	}
	b.mu.Lock()
	b.exits = append(b.exits, why)
	b.mu.Unlock()
}

// Running reports whether the broker process is started and has not
// exited.
func (b *Broker) Running() bool {
	b.mu.Lock()
	p := b.proc
	b.mu.Unlock()
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Exits says how each finished run ended, oldest first: "exit status 0"
// for a clean exit, "signal: killed" after Kill, and so on.
func (b *Broker) Exits() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.exits...)
}

// LastExitClean reports whether the most recent run exited with status 0.
func (b *Broker) LastExitClean() bool {
	exits := b.Exits()
	return len(exits) > 0 && exits[len(exits)-1] == "exit status 0"
}

// LogTail returns the end of the broker's log.
func (b *Broker) LogTail() string {
	data, err := os.ReadFile(b.LogPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err.Error()
	}
	if len(data) > logTailBytes {
		data = data[len(data)-logTailBytes:]
	}
	return string(data)
}
