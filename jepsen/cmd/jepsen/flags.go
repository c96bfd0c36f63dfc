package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/floe-broker/floe/jepsen/nemesis"
)

// options are a run's flags.
type options struct {
	duration, interval, window   time.Duration
	setupTimeout, drainTimeout   time.Duration
	finalTimeout, checkTimeout   time.Duration
	opTimeout                    time.Duration
	nodes, partitions, producers int
	groups, consumers, fetchers  int
	replication                  int
	rate                         float64
	nemeses, targets             string
	seed                         int64
	pkg, tags, out, image, runID string
	env, plant, expectInvalid    string
	stub, keep, plaintext        bool
	notes                        []string // facts of the run for the summary
	portBase                     int
	staleFetches                 bool
	txnProducers                 int
	txnRate                      float64
	txnTimeout                   time.Duration
}

// timings are the duration flags' defaults: a full run (about 10 minutes
// with build, setup, drain and checks) or the smoke run (at most 5).
type timings struct {
	duration, interval, window, setup, drain, final, check time.Duration
}

func defaultTimings(smoke bool) timings {
	if smoke {
		return timings{90 * time.Second, 8 * time.Second, 8 * time.Second, time.Minute, 30 * time.Second, 30 * time.Second, 20 * time.Second}
	}
	return timings{7 * time.Minute, 15 * time.Second, 10 * time.Second, 2 * time.Minute, time.Minute, time.Minute, time.Minute}
}

func parseOptions(args []string, smoke bool) (options, error) {
	var o options
	d := defaultTimings(smoke)
	fs := flag.NewFlagSet("jepsen run", flag.ContinueOnError)
	fs.DurationVar(&o.duration, "duration", d.duration, "how long faults and traffic run")
	fs.DurationVar(&o.interval, "interval", d.interval, "quiet time between faults")
	fs.DurationVar(&o.window, "window", d.window, "how long each fault lasts")
	fs.DurationVar(&o.setupTimeout, "setup-timeout", d.setup, "time for the cluster to elect leaders for the topic")
	fs.DurationVar(&o.drainTimeout, "drain-timeout", d.drain, "time for consumers to catch up after healing")
	fs.DurationVar(&o.finalTimeout, "final-timeout", d.final, "time for the final read")
	fs.DurationVar(&o.checkTimeout, "check-timeout", d.check, "wall-clock bound of each Porcupine search (timeout: unknown)")
	fs.DurationVar(&o.opTimeout, "op-timeout", 10*time.Second, "one client operation's timeout (then info)")
	fs.IntVar(&o.nodes, "nodes", 5, "brokers")
	fs.IntVar(&o.partitions, "partitions", 4, "partitions of the test topic")
	fs.IntVar(&o.replication, "replication", 3, "replication factor of the test topic")
	fs.IntVar(&o.producers, "producers", 4, "producer clients")
	fs.IntVar(&o.groups, "groups", 1, "consumer groups")
	fs.IntVar(&o.consumers, "consumers", 2, "consumers per group")
	fs.IntVar(&o.fetchers, "fetchers", 1, "direct fetchers (linearizability reads)")
	fs.Float64Var(&o.rate, "rate", 50, "produce operations per second, all producers (0: unthrottled)")
	fs.StringVar(&o.nemeses, "nemeses", "kill,pause,partition-one,partition-half,partition-bridge",
		"comma-separated fault kinds, or none ("+kindsList()+")")
	fs.StringVar(&o.targets, "targets", "", "whom faults aim at: any, leader, controller, coordinator (a transaction coordinator; default: all four, coordinator only with --txn-producers)")
	fs.IntVar(&o.txnProducers, "txn-producers", 3, "transactional producers on their own topic (0: no transactional workload)")
	fs.Float64Var(&o.txnRate, "txn-rate", 10, "transactions per second, all transactional producers (0: unthrottled)")
	fs.DurationVar(&o.txnTimeout, "txn-timeout", 10*time.Second, "the transactional producers' transaction.timeout.ms")
	fs.Int64Var(&o.seed, "seed", time.Now().UnixNano()%1e9, "seed of the fault schedule and the workload's choices")
	fs.StringVar(&o.pkg, "pkg", "./cmd/floe", "package of the broker binary")
	fs.StringVar(&o.tags, "tags", "", "build tags (floe_bugs for a build that can plant bugs)")
	fs.StringVar(&o.env, "env", "", "comma-separated NAME=value for every node (e.g. a planted bug's switch)")
	fs.StringVar(&o.plant, "plant", "", "plant a bug (internal/plant name, e.g. ack-before-quorum): builds with floe_bugs and sets FLOE_PLANT on every node")
	fs.StringVar(&o.expectInvalid, "expect-invalid", "", "self-test of a planted bug: succeed only if this checker (e.g. lost-write) reports invalid")
	fs.BoolVar(&o.stub, "stub", false, "run the kfake stand-in (jepsen/internal/stubbroker) instead of floe: plumbing self-test; forces --nodes 1 --replication 1")
	fs.StringVar(&o.out, "out", "jepsen/out", "directory that receives the run directory")
	fs.StringVar(&o.image, "image", "floe-jepsen:latest", "image tag to build and run")
	fs.IntVar(&o.portBase, "port-base", 19092, "first published Kafka port on 127.0.0.1 (node i: base+i-1)")
	fs.BoolVar(&o.keep, "keep", false, "leave the containers running at the end (jepsen clean removes them)")
	fs.BoolVar(&o.staleFetches, "stale-fetches", false, "let fetches see an old high watermark (non-linearizable reads)")
	fs.BoolVar(&o.plaintext, "plaintext", false, "run without security (default: clients on SASL_SSL with SCRAM, brokers over mutual TLS)")
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if o.stub {
		o.nodes, o.replication, o.pkg = 1, 1, "./jepsen/internal/stubbroker"
		o.plaintext = true // the kfake stand-in has no TLS
	}
	if o.targets == "" {
		o.targets = "any,leader,controller"
		if o.txnProducers > 0 {
			o.targets += ",coordinator"
		}
	}
	if o.nodes < 1 || o.partitions < 1 || o.producers < 1 || o.txnProducers < 0 {
		return o, fmt.Errorf("need at least one node, partition and producer")
	}
	o.runID = time.Now().UTC().Format("20060102-150405")
	return o, nil
}

func kindsList() string {
	var s []string
	for _, k := range nemesis.AllKinds {
		s = append(s, string(k))
	}
	return strings.Join(append(s, string(nemesis.Membership)), ", ")
}

func (o options) kinds() []nemesis.Kind {
	if o.nemeses == "none" || o.nemeses == "" {
		return nil
	}
	var out []nemesis.Kind
	for _, k := range strings.Split(o.nemeses, ",") {
		out = append(out, nemesis.Kind(strings.TrimSpace(k)))
	}
	return out
}

func (o options) targetList() []nemesis.Target {
	var out []nemesis.Target
	for _, t := range strings.Split(o.targets, ",") {
		out = append(out, nemesis.Target(strings.TrimSpace(t)))
	}
	return out
}

func (o options) envList() []string {
	if o.env == "" {
		return nil
	}
	return strings.Split(o.env, ",")
}

func (o options) partitionsWanted() bool {
	for _, k := range o.kinds() {
		if strings.HasPrefix(string(k), "partition") {
			return true
		}
	}
	return false
}
