package runtime

import (
	"context"
	"crypto/tls"
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
	"github.com/floe-broker/floe/node/quota"
)

// Options configures a production broker.
type Options struct {
	Node node.Config
	// DataDir is the directory on the real file system holding the logs.
	DataDir string
	// KafkaAddr is where the Kafka protocol server listens, when Listeners
	// is empty: one PLAINTEXT listener.
	KafkaAddr string
	// Listeners are the Kafka listeners; see Listener.
	Listeners []Listener
	// Security configures TLS and authentication for the listeners, the
	// peer transport and the admin endpoint.
	Security Security
	// AdminAddr is where the HTTP endpoint (metrics, health) listens; ""
	// disables it.
	AdminAddr string
	// RaftAddr is where the peer transport listens (cluster mode only).
	RaftAddr string
	// MaxRequestBytes caps one Kafka request.
	MaxRequestBytes int32
	Logger          *slog.Logger
	// Quotas is how client byte rates are sampled against their quotas
	// (quotas.go); zero: Kafka's defaults, 11 windows of 1 s.
	Quotas quota.Config
	// AuditLogFile, when set, is a file every audit record this broker
	// generates is appended to, one JSON line each (auditfile.go).
	AuditLogFile string
	// ProduceStageSample breaks one produce request in every N down into
	// its stages (floe_produce_stage_seconds, stages.go); 0 means
	// ProduceStageSampleDefault, a negative value turns it off.
	ProduceStageSample int
}

// Broker is a running production broker.
type Broker struct {
	opts    Options
	log     *slog.Logger
	loop    *loop
	reactor *node.Reactor
	disk    *disk
	tcp     *netx.TCP
	kafka   []*kafka.Server // one per listener, in Options.Listeners order
	names   []string        // the listeners' names
	sec     *security
	admin   *adminServer
	metrics *metrics
	quotas  *quotaEnforcer // client byte-rate quotas (quotas.go)
	tracer  *tracer        // nil when tracing is off (tracing.go)
	// telemetryOTLP exports the clients' pushed metrics over OTLP (nil
	// when tracing or the export is off; telemetry_otlp.go).
	telemetryOTLP *telemetryExporter
	stages        *stageHistograms
	lock          *os.File
	audit         *auditFile

	loopRunning bool // loop.run was started (closeEarly may come before)

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
	sample := opts.ProduceStageSample
	if sample == 0 {
		sample = ProduceStageSampleDefault
	}
	b.stages = newStageHistograms(b.metrics.reg, sample)
	b.quotas = newQuotaEnforcer(b.metrics.reg, opts.Quotas, time.Now)
	if b.tracer, err = newTracer(os.Getenv, opts.Node.NodeID); err != nil {
		_ = unlockDir(lock)
		return nil, err
	}
	if b.telemetryOTLP, err = newTelemetryExporter(os.Getenv, opts.Node.NodeID, b.log, b.telemetrySnapshot); err != nil {
		tctx, cancel := context.WithTimeout(context.Background(), tracerShutdownTimeout)
		_ = b.tracer.shutdown(tctx)
		cancel()
		_ = unlockDir(lock)
		return nil, err
	}
	b.disk = newDiskRounds(b.loop.post, b.metrics, logstore.PlansInFlightMax)
	if len(opts.Listeners) == 0 {
		opts.Listeners = []Listener{{Name: ProtocolPlaintext, Protocol: ProtocolPlaintext, Addr: opts.KafkaAddr}}
	}
	if b.sec, err = b.buildSecurity(opts.Listeners, opts.Security, b.log); err != nil {
		b.disk.stop()
		_ = unlockDir(lock)
		return nil, err
	}

	var transport netx.Transport = nullTransport{}
	if opts.RaftAddr != "" {
		tcfg := netx.TCPConfig{Self: netx.NodeID(opts.Node.NodeID), ListenAddr: opts.RaftAddr, Logger: b.log}
		if pt := b.sec.peerTLS; pt != nil {
			tcfg.ServerTLS, _ = pt.ServerConfig(tls.RequireAndVerifyClientCert) // buildSecurity checked the files
			tcfg.ClientTLS = func(addr string) *tls.Config { return pt.ClientConfig(peerServerName(addr)) }
		}
		tcp, err := netx.NewTCP(tcfg,
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

		DiskSpace: diskSpace(opts.DataDir),
	}
	if b.audit != nil {
		env.AuditSink = b.audit.write
	}
	ncfg := opts.Node
	ncfg.DataDir = "."
	b.reactor = node.New(ncfg, env)
	go b.loop.run()
	b.loopRunning = true
	var startErr error
	if !b.loop.call(func() { startErr = b.reactor.Start() }, time.Minute) {
		startErr = errors.New("reactor did not start within a minute")
	}
	if startErr != nil {
		b.closeEarly()
		return nil, startErr
	}
	b.telemetryOTLP.run()
	if err := b.startListeners(opts); err != nil {
		b.closeEarly()
		return nil, err
	}
	if opts.AdminAddr != "" {
		var atls *tls.Config
		if opts.Security.AdminTLS {
			atls, _ = b.sec.tls.ServerConfig(tls.NoClientCert)
		}
		a, err := startAdmin(opts.AdminAddr, b, atls)
		if err != nil {
			b.closeEarly()
			return nil, fmt.Errorf("admin listener %s: %w", opts.AdminAddr, err)
		}
		b.admin = a
	}
	return b, nil
}

// startListeners starts one Kafka protocol server per listener.
func (b *Broker) startListeners(opts Options) error {
	base := kafka.Config{MaxRequestBytes: opts.MaxRequestBytes, Versions: kafkaVersions(), Logger: b.log, Observer: b.metrics,
		AdmitConn: func(remote net.Addr) time.Duration { return b.quotas.admitConn(b.loop.post, b.reactor, remote) },
		OnAuth: func(c *kafka.ConnInfo, principal, mechanism string, ok bool, reason string) {
			b.AuditAuthentication(node.Client{ConnID: c.ID, ClientID: c.ClientID, Remote: c.Remote, Listener: c.Listener,
				Principal: c.Principal}, principal, mechanism, ok, reason)
		}}
	for _, l := range opts.Listeners {
		cfg, err := b.sec.kafkaConfig(l, base, opts.Security.ReauthMax)
		if err != nil {
			return err
		}
		srv := kafka.NewServer(cfg, handler{b})
		if err := srv.Listen(); err != nil {
			return fmt.Errorf("kafka listener %s (%s): %w", l.Name, l.Addr, err)
		}
		b.kafka, b.names = append(b.kafka, srv), append(b.names, l.Name)
		go func() {
			if err := srv.Serve(); err != nil && !errors.Is(err, kafka.ErrServerClosed) {
				b.log.Error("kafka server", "listener", l.Name, "err", err)
			}
		}()
	}
	return nil
}

// KafkaAddr returns the first listener's bound address.
func (b *Broker) KafkaAddr() string { return b.kafka[0].Addr().String() }

// ListenerAddr returns the named listener's bound address, or "".
func (b *Broker) ListenerAddr(name string) string {
	for i, n := range b.names {
		if n == name {
			return b.kafka[i].Addr().String()
		}
	}
	return ""
}

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
	for _, k := range b.kafka {
		errs = append(errs, k.Shutdown(ctx))
	}
	if b.admin != nil {
		b.admin.close()
	}
	b.telemetryOTLP.close()
	tctx, cancel := context.WithTimeout(context.Background(), tracerShutdownTimeout)
	errs = append(errs, b.tracer.shutdown(tctx))
	cancel()
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
	if b.reactor != nil && b.loopRunning {
		b.loop.call(b.reactor.Stop, 10*time.Second)
	}
	if b.loopRunning {
		b.loop.stop() // waits for run, which must have started
	}
	b.disk.stop()
	if b.tcp != nil {
		_ = b.tcp.Close()
	}
	for _, k := range b.kafka {
		k.Close()
	}
	_ = b.audit.close()
	b.telemetryOTLP.close()
	tctx, cancel := context.WithTimeout(context.Background(), tracerShutdownTimeout)
	_ = b.tracer.shutdown(tctx)
	cancel()
	_ = unlockDir(b.lock)
}

// handler adapts the reactor to the Kafka server: each request becomes an
// event on the reactor's loop.
type handler struct{ b *Broker }

func (h handler) Serve(c *kafka.ConnInfo, req kmsg.Request, respond func(kmsg.Response)) {
	h.b.loop.post(h.task(c, req, respond))
}

// ServeRead implements kafka.ReadTimedHandler: Serve, knowing when the
// request's bytes began to arrive (the produce stage histograms'
// socket read, stages.go).
func (h handler) ServeRead(c *kafka.ConnInfo, req kmsg.Request, respond func(kmsg.Response), readAt time.Time) {
	h.b.loop.post(h.taskRead(c, req, respond, readAt))
}

// task returns the event that serves req on the reactor. With tracing on
// and the request sampled, the span starts here, off the reactor, and the
// event only adds a clock read and the core's stage timings; a produce
// request sampled for the stage histograms (stages.go) takes the same
// way without a span. Otherwise the event is the bare HandleRequest call.
func (h handler) task(c *kafka.ConnInfo, req kmsg.Request, respond func(kmsg.Response)) func() {
	return h.taskRead(c, req, respond, time.Time{})
}

func (h handler) taskRead(c *kafka.ConnInfo, req kmsg.Request, respond func(kmsg.Response), readAt time.Time) func() {
	client := node.Client{ConnID: c.ID, ClientID: c.ClientID, Remote: c.Remote, Prepared: node.Prepare(req),
		Principal: c.Principal, Listener: c.Listener}
	testPrincipal(c, &client)
	// The events apply the client's quotas (quotas.go) on the reactor,
	// which holds the metadata quotas are resolved from, and measure the
	// reactor time request_percentage counts.
	q, r := h.b.quotas, h.b.reactor
	var rt *reqTrace
	if h.b.tracer != nil {
		rt = h.b.tracer.start(c, req)
	}
	if req.Key() == produceKey && h.b.stages.sample() {
		if rt == nil {
			rt = &reqTrace{posted: time.Now()}
		}
		rt.hist, rt.readAt = h.b.stages, readAt
	}
	if rt != nil {
		client.Trace = &rt.core
		respond = rt.respond(respond)
		return func() {
			rt.begin()
			answer, s := q.wrap(r, q.begin(), client.Principal, client.ClientID, req, respond)
			r.HandleRequest(client, req, answer)
			s.end()
		}
	}
	return func() {
		answer, s := q.wrap(r, q.begin(), client.Principal, client.ClientID, req, respond)
		r.HandleRequest(client, req, answer)
		s.end()
	}
}

// produceKey is the Kafka API key of Produce.
var produceKey = (&kmsg.ProduceRequest{}).Key()

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

// telemetrySnapshot reads the clients' pushed metrics on the reactor's
// loop (false when the loop does not answer in time).
func (b *Broker) telemetrySnapshot() ([]node.TelemetryMetric, uint64, bool) {
	var ms []node.TelemetryMetric
	var pushes uint64
	ok := b.loop.call(func() { ms, pushes = b.reactor.TelemetryStats() }, 5*time.Second)
	return ms, pushes, ok
}
