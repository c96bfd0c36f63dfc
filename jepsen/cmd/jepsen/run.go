package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/floe-broker/floe/jepsen/check"
	"github.com/floe-broker/floe/jepsen/cluster"
	"github.com/floe-broker/floe/jepsen/history"
	"github.com/floe-broker/floe/jepsen/nemesis"
	"github.com/floe-broker/floe/jepsen/report"
	"github.com/floe-broker/floe/jepsen/workload"
)

// run carries out one run. Whatever happens (an error, SIGINT), the
// deferred cleanup removes the containers, the network (and with them the
// iptables rules, which live in the containers' namespaces) and the data
// directories, unless --keep.
func run(ctx context.Context, args []string, smoke bool) error {
	o, err := parseOptions(args, smoke)
	if err != nil {
		return err
	}
	dir := filepath.Join(o.out, o.runID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dir, "harness.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	log := io.MultiWriter(os.Stderr, logf)
	fmt.Fprintf(log, "jepsen: run %s seed %d, writing %s\n", o.runID, o.seed, dir)
	if err := report.WriteJSON(dir, report.RunFile, o.describe()); err != nil {
		return err
	}

	c, sec, err := prepare(ctx, o, log)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.SaveLogs(cctx, dir); err != nil {
			fmt.Fprintf(log, "jepsen: saving node logs: %v\n", err)
		}
		if o.keep {
			fmt.Fprintf(log, "jepsen: --keep: containers left running; `jepsen clean` removes them\n")
			return
		}
		if err := c.Close(cctx); err != nil {
			fmt.Fprintf(log, "jepsen: cleanup: %v\n", err)
		}
	}()
	if err := c.Start(ctx); err != nil {
		return err
	}
	return runWorkload(ctx, o, c, clientOpts(sec), dir, log)
}

// clientOpts are the workload clients' security options: TLS to the
// run's CA and SCRAM-SHA-512 as the bootstrap user; none in plaintext.
func clientOpts(sec *cluster.Secure) []kgo.Opt {
	if sec == nil {
		return nil
	}
	return []kgo.Opt{kgo.DialTLSConfig(sec.ClientTLS()),
		kgo.SASL(scram.Auth{User: sec.User, Pass: sec.Password}.AsSha512Mechanism())}
}

// prepare builds the binary and the image, makes the run's certificates
// and users (unless --plaintext) and describes the cluster.
func prepare(ctx context.Context, o options, log io.Writer) (*cluster.Cluster, *cluster.Secure, error) {
	if !cluster.Available(ctx) {
		return nil, nil, fmt.Errorf("no Docker daemon answers (docker info)")
	}
	if o.partitionsWanted() {
		if err := cluster.IptablesAvailable(); err != nil {
			return nil, nil, err
		}
	}
	mod, err := moduleDir()
	if err != nil {
		return nil, nil, err
	}
	build, err := os.MkdirTemp("", "floe-jepsen-build-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(build)
	bin := filepath.Join(build, "floe")
	var tags []string
	if o.tags != "" {
		tags = strings.Split(o.tags, ",")
	}
	b := cluster.Build{ModuleDir: mod, Pkg: o.pkg, Out: bin, Tags: tags}
	if o.plant != "" {
		b.Tags = append(b.Tags, "floe_bugs") // plants what FLOE_PLANT names (internal/plant)
	}
	if err := cluster.BuildBinary(ctx, log, b); err != nil {
		return nil, nil, err
	}
	if err := cluster.BuildImage(ctx, log, bin, o.image); err != nil {
		return nil, nil, err
	}
	env := o.envList()
	if o.plant != "" {
		env = append(env, "FLOE_PLANT="+o.plant)
	}
	cfg := cluster.Config{RunID: o.runID, Nodes: o.nodes, Image: o.image, KafkaPortBase: o.portBase, Env: env, Log: log,
		DataRoot: filepath.Join(os.TempDir(), "floe-jepsen-"+o.runID)}
	var sec *cluster.Secure
	if !o.plaintext {
		if sec, err = cluster.NewSecure(filepath.Join(cfg.DataRoot, "certs")); err != nil {
			return nil, nil, fmt.Errorf("certificates: %w", err)
		}
		cfg.Args, cfg.Mounts = sec.ServeArgs(cluster.ServeArgs), []string{sec.Mount()}
		fmt.Fprintf(log, "jepsen: security on: %s\n", sec.Describe())
	}
	c, err := cluster.New(cfg)
	return c, sec, err
}

// moduleDir finds the module's root, where the broker is built from.
func moduleDir() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
		return "", fmt.Errorf("run jepsen from inside the floe module (go env GOMOD: %v)", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}

// runWorkload: setup, traffic under faults, heal, drain, final read, check.
func runWorkload(ctx context.Context, o options, c *cluster.Cluster, clientOpts []kgo.Opt, dir string, log io.Writer) error {
	hf, err := os.Create(filepath.Join(dir, report.HistoryFile))
	if err != nil {
		return err
	}
	defer hf.Close()
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	rec := history.NewRecorder(hf, now)
	w, err := workload.New(workload.Config{Brokers: c.KafkaAddrs(), Topic: "jepsen", Partitions: int32(o.partitions),
		Replication: int16(o.replication), Producers: o.producers, Rate: o.rate, Groups: o.groups,
		Consumers: o.consumers, Fetchers: o.fetchers, OpTimeout: o.opTimeout, Seed: o.seed, Log: log,
		TxnProducers: o.txnProducers, TxnRate: o.txnRate, TxnTimeout: o.txnTimeout,
		ClientOpts: clientOpts}, rec)
	if err != nil {
		return err
	}
	defer w.Close()

	phase(log, start, "setup: creating the topic, waiting for leaders")
	sctx, cancel := context.WithTimeout(ctx, o.setupTimeout)
	err = w.Setup(sctx)
	cancel()
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}

	nem, err := newNemesis(o, c, w, rec, now, log)
	if err != nil {
		return err
	}
	phase(log, start, fmt.Sprintf("traffic and faults for %v", o.duration))
	w.Start(ctx)
	fctx, cancel := context.WithTimeout(ctx, o.duration)
	if nem != nil {
		nem.Run(fctx) // heals before returning
	} else {
		<-fctx.Done()
	}
	cancel()
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted")
	}

	exits := reviveExited(ctx, c, rec, log)
	phase(log, start, "healed; stopping producers, draining consumers")
	w.StopProducers()
	dctx, cancel := context.WithTimeout(ctx, o.drainTimeout)
	if err := w.Drain(dctx); err != nil {
		fmt.Fprintf(log, "jepsen: %v\n", err)
	}
	cancel()
	phase(log, start, "final read")
	rctx, cancel := context.WithTimeout(ctx, o.finalTimeout)
	if err := w.FinalRead(rctx); err != nil {
		fmt.Fprintf(log, "jepsen: %v\n", err)
	}
	cancel()
	if err := rec.Flush(); err != nil {
		return fmt.Errorf("writing the history: %w", err)
	}
	var timeline []nemesis.Event
	if nem != nil {
		timeline = nem.Timeline()
	}
	phase(log, start, "checking")
	if len(exits) > 0 {
		o.notes = append(o.notes, fmt.Sprintf("nodes %v exited on their own (crash or outside signal; see their logs) and were restarted before the drain", exits))
	}
	return finish(dir, rec.History(), timeline, o, log)
}

// reviveExited restarts nodes whose container exited though the nemesis
// did not kill them (it heals what it did): a crash, or a signal from
// outside. They are noted in the history and the summary.
func reviveExited(ctx context.Context, c *cluster.Cluster, rec *history.Recorder, log io.Writer) []int {
	exited, err := c.Exited(ctx)
	if err != nil {
		fmt.Fprintf(log, "jepsen: checking containers: %v\n", err)
	}
	for _, id := range exited {
		note := fmt.Sprintf("node %d found exited, not by the nemesis; restarting it", id)
		op := history.Op{Process: -1, Type: history.Info, F: history.Nemesis, Note: note}
		if err := c.Restart(ctx, id); err != nil {
			op.Error = err.Error()
		}
		rec.Add(op)
		fmt.Fprintf(log, "jepsen: %s %s\n", note, op.Error)
	}
	return exited
}

func phase(log io.Writer, start time.Time, what string) {
	fmt.Fprintf(log, "jepsen: [%6.1fs] %s\n", time.Since(start).Seconds(), what)
}

func newNemesis(o options, c *cluster.Cluster, w *workload.Workload, rec *history.Recorder, now func() int64, log io.Writer) (*nemesis.Nemesis, error) {
	kinds := o.kinds()
	if len(kinds) == 0 {
		return nil, nil
	}
	topo := func(ctx context.Context) (int32, []int32, error) {
		t, err := w.Topology(ctx)
		var leaders []int32
		for p := int32(0); p < int32(o.partitions); p++ {
			if l, ok := t.Leaders[p]; ok {
				leaders = append(leaders, l)
			}
		}
		return t.Controller, leaders, err
	}
	cfg := nemesis.Config{Kinds: kinds, Targets: o.targetList(), Interval: o.interval,
		Window: o.window, Seed: o.seed, Log: log}
	if o.txnProducers > 0 {
		cfg.Coordinators = w.Coordinators
	}
	return nemesis.New(cfg, c, topo, rec, now)
}

// finish writes the timeline, checks the history, writes the results and
// the plot, and turns the verdict into the exit status.
func finish(dir string, h history.History, timeline []nemesis.Event, o options, log io.Writer) error {
	if err := report.WriteTimeline(dir, timeline); err != nil {
		return err
	}
	rep := check.Check(h, check.Options{Timeout: o.checkTimeout, StaleFetches: o.staleFetches})
	txn := "no transactional workload"
	switch {
	case o.txnProducers < 0:
		txn = "transactional producers (recheck)"
	case o.txnProducers > 0:
		txn = fmt.Sprintf("%d transactional producers", o.txnProducers)
	}
	header := fmt.Sprintf("run %s seed %d: %d nodes, %v, nemeses %s, targets %s, %s, %d events, %d faults\n",
		o.runID, o.seed, o.nodes, o.duration, o.nemeses, o.targets, txn, len(h), len(timeline))
	avail := report.Measure(h, timeline)
	if err := report.WriteJSON(dir, report.AvailabilityFile, avail); err != nil {
		return err
	}
	header += avail.String()
	for _, n := range o.notes {
		header += "note: " + n + "\n"
	}
	if err := report.WriteResults(dir, rep, header); err != nil {
		return err
	}
	if err := report.Plot(h, timeline, "floe jepsen "+o.runID, filepath.Join(dir, report.PlotFile)); err != nil {
		fmt.Fprintf(log, "jepsen: plot: %v\n", err)
	}
	fmt.Fprint(log, header+rep.Summary())
	fmt.Fprintf(log, "jepsen: results in %s\n", dir)
	if o.expectInvalid != "" {
		if r, ok := rep.Result(o.expectInvalid); ok && r.Valid == check.Invalid {
			fmt.Fprintf(log, "jepsen: %s reported invalid, as expected\n", o.expectInvalid)
			return nil
		}
		return errInvalid{"nothing where " + o.expectInvalid + " was expected to be invalid", dir}
	}
	if rep.Valid != check.Valid {
		return errInvalid{string(rep.Valid), dir}
	}
	return nil
}

// recheck re-runs the checkers on a run directory.
func recheck(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: jepsen check DIR")
	}
	dir := args[0]
	f, err := os.Open(filepath.Join(dir, report.HistoryFile))
	if err != nil {
		return err
	}
	defer f.Close()
	h, err := history.Decode(f)
	if err != nil {
		return err
	}
	timeline, err := report.ReadTimeline(dir)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	o := options{runID: filepath.Base(dir), checkTimeout: 5 * time.Minute, nemeses: "(recheck)", targets: "(recheck)", txnProducers: -1}
	return finish(dir, h, timeline, o, os.Stderr)
}

// describe is run.json: the run's parameters, enough to run it again.
func (o options) describe() map[string]any {
	return map[string]any{
		"run": o.runID, "seed": o.seed, "nodes": o.nodes, "partitions": o.partitions, "replication": o.replication,
		"producers": o.producers, "groups": o.groups, "consumers": o.consumers, "fetchers": o.fetchers,
		"rate": o.rate, "duration": o.duration.String(), "interval": o.interval.String(), "window": o.window.String(),
		"nemeses": o.nemeses, "targets": o.targets, "pkg": o.pkg, "tags": o.tags, "env": o.env, "stub": o.stub,
		"plant": o.plant, "expect_invalid": o.expectInvalid, "security": securityName(o.plaintext),
		"txn_producers": o.txnProducers, "txn_rate": o.txnRate, "txn_timeout": o.txnTimeout.String(),
	}
}

// securityName names a run's security for its summary.
func securityName(plaintext bool) string {
	if plaintext {
		return "plaintext"
	}
	return "SASL_SSL (SCRAM-SHA-512) clients, mutual TLS between brokers"
}
