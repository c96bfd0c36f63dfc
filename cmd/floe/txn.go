package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

func init() {
	addCommand("txn", "list or describe transactions and the producers of a partition", runTxn)
}

// The actions and flags follow Kafka's kafka-transactions.sh.
const txnUsage = `usage: floe txn <action> [flags]

actions:
  list                 every transactional id: state, producer id, coordinator
  describe             one transactional id: state, producer id and epoch,
                       timeout, start time, partitions of the open transaction
                       (--transactional-id)
  describe-producers   the producers a partition's leader remembers: epoch,
                       last sequence and timestamp, and the first offset of
                       an open transaction (--topic, --partition)

flags:
  --brokers           comma-separated seed brokers (default 127.0.0.1:9092)
  --command-config    Kafka client properties file (TLS, SASL; docs/security.md)
  --transactional-id  describe: the transactional id
  --topic             describe-producers: the topic
  --partition         describe-producers: the partition (default: every one)
  --state             list: only transactions in these states (comma-separated)
  --timeout           how long to wait for the cluster (default 10s)
`

type txnFlags struct {
	*clientFlags
	id, topic, state *string
	partition        *int
}

func runTxn(args []string) error { return txnMain(args, os.Stdout) }

func txnMain(args []string, out io.Writer) error {
	action, fs, cf, err := beginAction("txn", txnUsage, []string{"list", "describe", "describe-producers"}, args, 10*time.Second)
	if action == "" {
		return err
	}
	run := map[string]func(context.Context, *kadm.Client, *txnFlags, io.Writer) error{
		"list": txnList, "describe": txnDescribe, "describe-producers": txnDescribeProducers,
	}[action]
	tf := &txnFlags{
		clientFlags: cf,
		id:          fs.String("transactional-id", "", "describe: the transactional id"),
		topic:       fs.String("topic", "", "describe-producers: the topic"),
		state:       fs.String("state", "", "list: only transactions in these states (comma-separated)"),
		partition:   fs.Int("partition", -1, "describe-producers: the partition (-1: every one)"),
	}
	rest, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	switch {
	case len(rest) > 0:
		return usagef("floe txn %s takes no arguments (got %s)", action, strings.Join(rest, " "))
	case action == "describe" && *tf.id == "":
		return usagef("floe txn describe: --transactional-id is required")
	case action == "describe-producers" && *tf.topic == "":
		return usagef("floe txn describe-producers: --topic is required")
	}
	cl, err := tf.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *tf.timeout)
	defer cancel()
	return tf.explain(run(ctx, kadm.NewClient(cl), tf, out))
}

func txnList(ctx context.Context, adm *kadm.Client, tf *txnFlags, out io.Writer) error {
	var states []string
	if *tf.state != "" {
		states = splitList(*tf.state)
	}
	listed, err := adm.ListTransactions(ctx, nil, states)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TRANSACTIONAL-ID\tSTATE\tPRODUCER-ID\tCOORDINATOR")
	for _, l := range listed.Sorted() {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", l.TxnID, l.State, l.ProducerID, l.Coordinator)
	}
	return tw.Flush()
}

func txnDescribe(ctx context.Context, adm *kadm.Client, tf *txnFlags, out io.Writer) error {
	described, err := adm.DescribeTransactions(ctx, *tf.id)
	if err != nil && len(described) == 0 {
		return err
	}
	d, ok := described[*tf.id]
	switch {
	case !ok:
		return fmt.Errorf("transactional id %s: no answer", *tf.id)
	case d.Err != nil:
		return fmt.Errorf("transactional id %s: %w", *tf.id, d.Err)
	}
	start := "-"
	if d.StartTimestamp >= 0 {
		start = time.UnixMilli(d.StartTimestamp).UTC().Format(time.RFC3339Nano)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TRANSACTIONAL-ID\tCOORDINATOR\tSTATE\tPRODUCER-ID\tEPOCH\tTIMEOUT-MS\tSTART\tPARTITIONS")
	fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%s\t%s\n", d.TxnID, d.Coordinator, d.State, d.ProducerID, d.ProducerEpoch,
		d.TimeoutMillis, start, topicsSetString(d.Topics))
	return tw.Flush()
}

// topicsSetString renders partitions as topic-p,topic-p sorted, or "-".
func topicsSetString(s kadm.TopicsSet) string {
	var parts []string
	for _, tp := range s.Sorted() {
		for _, p := range tp.Partitions {
			parts = append(parts, fmt.Sprintf("%s-%d", tp.Topic, p))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

func txnDescribeProducers(ctx context.Context, adm *kadm.Client, tf *txnFlags, out io.Writer) error {
	set := kadm.TopicsSet{}
	if *tf.partition >= 0 {
		set.Add(*tf.topic, int32(*tf.partition))
	} else {
		set.Add(*tf.topic)
	}
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil && len(described) == 0 {
		return err
	}
	parts := described.SortedPartitions()
	if len(parts) == 0 {
		return fmt.Errorf("topic %s: no partition described", *tf.topic)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tPRODUCER-ID\tEPOCH\tLAST-SEQUENCE\tLAST-TIMESTAMP\tCOORDINATOR-EPOCH\tTXN-START-OFFSET")
	var firstErr error
	for _, p := range parts {
		if p.Err != nil {
			fmt.Fprintf(tw, "%s\t%d\t%v\n", p.Topic, p.Partition, p.Err)
			if firstErr == nil {
				firstErr = fmt.Errorf("%s-%d: %w", p.Topic, p.Partition, p.Err)
			}
			continue
		}
		var ps []kadm.DescribedProducer
		for _, dp := range p.ActiveProducers { //floe:unordered sorted below
			ps = append(ps, dp)
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i].ProducerID < ps[j].ProducerID })
		for _, dp := range ps {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", p.Topic, p.Partition, dp.ProducerID, dp.ProducerEpoch,
				dp.LastSequence, dp.LastTimestamp, dp.CoordinatorEpoch, dp.CurrentTxnStartOffset)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if firstErr == nil {
		firstErr = err // a broker that did not answer
	}
	return firstErr
}
