package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/clock"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/kafka"
)

// Options configures a production broker.
type Options struct {
	Node node.Config
	// DataDir is the directory on the real file system holding the logs.
	DataDir string
	// KafkaAddr is where the Kafka protocol server listens.
	KafkaAddr string
	// AdminAddr is where the HTTP endpoint (metrics, health) listens; ""
	// disables it.
	AdminAddr string
	// RaftAddr is where the peer transport listens (cluster mode only).
	RaftAddr string
	// MaxRequestBytes caps one Kafka request.
	MaxRequestBytes int32
	Logger          *slog.Logger
	// AuditLogFile, when set, is a file every audit record this broker
	// generates is appended to, one JSON line each (auditfile.go).
	AuditLogFile string
}

// Broker is a running production broker.
type Broker struct {
	opts    Options
	log     *slog.Logger
	loop    *loop
	reactor *node.Reactor
	disk    *disk
	tcp     *netx.TCP
	kafka   *kafka.Server
	admin   *adminServer
	metrics *metrics
	lock    *os.File
	audit   *auditFile

	fatalOnce sync.Once
	fatalErr  chan error
}

// Start opens the data directory, starts the reactor, the peer transport,
// the Kafka server and the admin endpoint.
func Start(opts Options) (*Broker, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", opts.DataDir, err)
	}
	lock, err := lockDir(opts.DataDir)
	if err != nil {
		return nil, err
	}
	b := &Broker{opts: opts, log: opts.Logger, loop: newLoop(), lock: lock, fatalErr: make(chan error, 1)}
	b.metrics = newMetrics()
	b.disk = newDisk(b.loop.post, b.metrics)

	var transport netx.Transport = nullTransport{}
	if opts.RaftAddr != "" {
		tcp, err := netx.NewTCP(netx.TCPConfig{Self: netx.NodeID(opts.Node.NodeID), ListenAddr: opts.RaftAddr, Logger: b.log},
			func(from netx.NodeID, msg []byte) { b.loop.post(func() { b.reactor.HandlePeer(from, msg) }) })
		if err != nil {
			b.closeEarly()
			return nil, fmt.Errorf("raft listener %s: %w", opts.RaftAddr, err)
		}
		b.tcp = tcp
		transport = tcp
	}
	if opts.AuditLogFile != "" {
		af, err := openAuditFile(opts.AuditLogFile, b.log)
		if err != nil {
			b.closeEarly()
			return nil, err
		}
		b.audit = af
	}
	env := node.Env{
		Clock: clock.NewReal(),
		Sched: b.loop,
		FS:    logstore.NewOSFS(opts.DataDir),
		Net:   transport,
		Disk:  b.disk,
		Rand:  rand.New(rand.NewSource(time.Now().UnixNano())),
		Logf:  func(format string, args ...any) { b.log.Info(fmt.Sprintf(format, args...)) },
		Fatal: b.fatal,
	}
	if b.audit != nil {
		env.AuditSink = b.audit.write
	}
	ncfg := opts.Node
	ncfg.DataDir = "."
	b.reactor = node.New(ncfg, env)
	go b.loop.run()
	var startErr error
	if !b.loop.call(func() { startErr = b.reactor.Start() }, time.Minute) {
		startErr = errors.New("reactor did not start within a minute")
	}
	if startErr != nil {
		b.closeEarly()
		return nil, startErr
	}
	b.kafka = kafka.NewServer(kafka.Config{
		Addr: opts.KafkaAddr, MaxRequestBytes: opts.MaxRequestBytes, Versions: kafkaVersions(),
		Logger: b.log, Observer: b.metrics,
	}, handler{b})
	if err := b.kafka.Listen(); err != nil {
		b.closeEarly()
		return nil, fmt.Errorf("kafka listener %s: %w", opts.KafkaAddr, err)
	}
	go func() {
		if err := b.kafka.Serve(); err != nil && !errors.Is(err, kafka.ErrServerClosed) {
			b.log.Error("kafka server", "err", err)
		}
	}()
	if opts.AdminAddr != "" {
		a, err := startAdmin(opts.AdminAddr, b)
		if err != nil {
			b.closeEarly()
			return nil, fmt.Errorf("admin listener %s: %w", opts.AdminAddr, err)
		}
		b.admin = a
	}
	return b, nil
}

// KafkaAddr returns the bound Kafka address.
func (b *Broker) KafkaAddr() string { return b.kafka.Addr().String() }

// AdminAddr returns the bound admin address, or "".
func (b *Broker) AdminAddr() string {
	if b.admin == nil {
		return ""
	}
	return b.admin.addr()
}

// RaftAddr returns the bound peer address, or "".
func (b *Broker) RaftAddr() string {
	if b.tcp == nil {
		return ""
	}
	return b.tcp.Addr()
}

// Fatal returns a channel that yields the error that stopped the broker.
func (b *Broker) Fatal() <-chan error { return b.fatalErr }

func (b *Broker) fatal(err error) {
	b.fatalOnce.Do(func() {
		b.log.Error("fatal: stopping", "err", err)
		b.fatalErr <- err
	})
}

// Shutdown hands this broker's leaderships to caught-up peers (so clients
// move over without waiting out an election timeout), stops accepting
// requests, lets in-flight ones finish (within ctx), then syncs and closes
// every log.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.transferLeaderships(ctx)
	var errs []error
	if b.kafka != nil {
		errs = append(errs, b.kafka.Shutdown(ctx))
	}
	if b.admin != nil {
		b.admin.close()
	}
	b.loop.call(b.reactor.Stop, time.Minute)
	b.loop.stop()
	b.disk.stop()
	if b.tcp != nil {
		errs = append(errs, b.tcp.Close())
	}
	errs = append(errs, b.audit.close())
	errs = append(errs, unlockDir(b.lock))
	return errors.Join(errs...)
}

// transferLeaderTimeout bounds how long a graceful shutdown waits for its
// leaderships to move.
const transferLeaderTimeout = 5 * time.Second

func (b *Broker) transferLeaderships(ctx context.Context) {
	if b.tcp == nil {
		return // a single node has nobody to hand leadership to
	}
	deadline := time.Now().Add(transferLeaderTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		led := -1
		b.loop.call(func() { led = b.reactor.TransferLeaderships() }, time.Second)
		if led == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.log.Warn("shutdown: some leaderships did not move in time")
}

func (b *Broker) closeEarly() {
	if b.reactor != nil {
		b.loop.call(b.reactor.Stop, 10*time.Second)
	}
	b.loop.stop()
	b.disk.stop()
	if b.tcp != nil {
		_ = b.tcp.Close()
	}
	if b.kafka != nil {
		b.kafka.Close()
	}
	_ = b.audit.close()
	_ = unlockDir(b.lock)
}

// handler adapts the reactor to the Kafka server: each request becomes an
// event on the reactor's loop.
type handler struct{ b *Broker }

func (h handler) Serve(c *kafka.ConnInfo, req kmsg.Request, respond func(kmsg.Response)) {
	client := node.Client{ConnID: c.ID, ClientID: c.ClientID, Remote: c.Remote, Prepared: node.Prepare(req)}
	testPrincipal(c, &client)
	h.b.loop.post(func() { h.b.reactor.HandleRequest(client, req, respond) })
}

func kafkaVersions() []kafka.ApiRange {
	var out []kafka.ApiRange
	for _, v := range node.Versions() {
		out = append(out, kafka.ApiRange{Key: v.Key, MinVersion: v.Min, MaxVersion: v.Max})
	}
	return out
}

// nullTransport is the transport of a single-node broker: it has no peers.
type nullTransport struct{}

func (nullTransport) Send(netx.NodeID, []byte) {}

// SplitHostPort parses an advertised address.
func SplitHostPort(addr string) (string, int32, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil || p <= 0 || p > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", addr)
	}
	return host, int32(p), nil
}
