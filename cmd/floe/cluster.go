package main

// floe cluster rolling-restart-check: whether the next broker of a rolling
// restart may go, the check an operator (or a script) runs between
// brokers, as Strimzi's and Confluent's operators check before rolling a
// Kafka broker.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	addCommand("cluster", "cluster-wide checks (rolling-restart-check)", runCluster)
}

const clusterUsage = `usage: floe cluster rolling-restart-check [--broker ID] [flags]

Says whether the next broker of a rolling restart may be stopped, and if
not, why. Exit status 0: it may; 1: not yet (the reasons are printed).

It asks every broker for the metadata and takes each partition's in-sync
replicas (ISR) from its leader: a replica is in sync while it has caught
up with the leader's log within replica.lag.time.max.ms (--replica-lag-time-max
on floe serve). It is safe to go on when:
  - every broker in the metadata answers, and they agree on a controller;
  - every partition has a leader;
  - no partition reassignment is in progress;
  - the controller quorum (DescribeQuorum, asked of the controller) has a
    leader; without --broker every voter has caught up with its high
    watermark; with --broker ID every voter other than ID has, and the
    voters without ID are still a majority;
  - without --broker: every partition has all its replicas in sync;
    with --broker ID: every partition with a replica on broker ID keeps a
    majority of its replicas in sync without it (it stays writable), and
    other partitions have a leader.
Run it before stopping each broker, e.g.
  until floe cluster rolling-restart-check --broker 2; do sleep 5; done

flags:
  --broker          the broker about to be stopped (default: require every replica in sync)
  --brokers         comma-separated seed brokers (default 127.0.0.1:9092)
  --command-config  Kafka client properties file (TLS, SASL; docs/security.md)
  --timeout         how long to wait for the cluster (default 10s)
`

func runCluster(args []string) error {
	if len(args) == 0 || args[0] != "rolling-restart-check" {
		fmt.Fprint(os.Stderr, clusterUsage)
		return errUsage
	}
	fs := flag.NewFlagSet("floe cluster rolling-restart-check", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, clusterUsage) }
	broker := fs.Int("broker", -1, "the broker about to be stopped")
	cf := addClientFlags(fs, 10*time.Second)
	rest, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usagef("unexpected arguments %q", rest)
	}
	if *broker == 0 || *broker < -1 {
		return usagef("bad --broker %d: want a broker id", *broker)
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *cf.timeout)
	defer cancel()
	v, err := restartCheck(ctx, cl, int32(*broker))
	if err != nil {
		return cf.explain(err)
	}
	for _, line := range v.notes {
		fmt.Println(line)
	}
	if len(v.reasons) > 0 {
		for _, r := range v.reasons {
			fmt.Println("not yet:", r)
		}
		return errNotReady
	}
	if *broker > 0 {
		fmt.Printf("ok: broker %d may be stopped\n", *broker)
	} else {
		fmt.Println("ok: every replica is in sync; the next broker may be stopped")
	}
	return nil
}

// errNotReady is the check's "not yet": the reasons are already printed.
var errNotReady = errors.New("not ready for the next broker to stop")

// restartVerdict is the check's result: why not (empty: go on), and what
// it saw.
type restartVerdict struct {
	reasons []string
	notes   []string
}

func (v *restartVerdict) notYet(format string, args ...any) {
	v.reasons = append(v.reasons, fmt.Sprintf(format, args...))
}

// restartCheck runs the check against the cluster cl reaches, for the
// broker about to stop (-1: any).
func restartCheck(ctx context.Context, cl *kgo.Client, stopping int32) (*restartVerdict, error) {
	v := &restartVerdict{}
	seed, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	ids := make([]int32, 0, len(seed.Brokers))
	for _, b := range seed.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	if stopping > 0 && !slices.Contains(ids, stopping) {
		v.notYet("broker %d is not in the cluster's metadata (brokers %s)", stopping, joinIDs(ids))
	}
	// Each broker's own answer: a partition's ISR is its leader's.
	views := map[int32]*kmsg.MetadataResponse{}
	controllers := map[int32][]int32{}
	for _, id := range ids {
		resp, err := cl.Broker(int(id)).Request(ctx, kmsg.NewPtrMetadataRequest())
		if err != nil {
			v.notYet("broker %d does not answer: %v", id, err)
			continue
		}
		md := resp.(*kmsg.MetadataResponse)
		views[id] = md
		controllers[md.ControllerID] = append(controllers[md.ControllerID], id)
	}
	if len(controllers) > 1 || controllers[-1] != nil {
		v.notYet("the brokers do not agree on a controller: %s", describeControllers(controllers))
	}
	checkPartitions(v, seed, views, stopping)
	checkQuorum(ctx, cl, v, seed.ControllerID, stopping)
	checkMoves(ctx, cl, v)
	v.notes = append(v.notes, fmt.Sprintf("brokers %s answered %d of %d; %d topics", joinIDs(ids), len(views), len(ids), len(seed.Topics)))
	return v, nil
}

func describeControllers(c map[int32][]int32) string {
	var parts []string
	for _, ctl := range sortedIDs(c) {
		name := strconv.Itoa(int(ctl))
		if ctl < 0 {
			name = "none"
		}
		parts = append(parts, fmt.Sprintf("%s according to %s", name, joinIDs(c[ctl])))
	}
	return strings.Join(parts, ", ")
}

func sortedIDs[V any](m map[int32]V) []int32 {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// checkPartitions checks each partition against its leader's view.
func checkPartitions(v *restartVerdict, seed *kmsg.MetadataResponse, views map[int32]*kmsg.MetadataResponse, stopping int32) {
	topics := append([]kmsg.MetadataResponseTopic(nil), seed.Topics...)
	sort.Slice(topics, func(i, j int) bool { return topicName(topics[i].Topic) < topicName(topics[j].Topic) })
	for _, t := range topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			v.notYet("topic %s: %v", topicName(t.Topic), err)
			continue
		}
		for _, p := range t.Partitions {
			tp := fmt.Sprintf("%s-%d", topicName(t.Topic), p.Partition)
			lp, ok := leaderView(views, topicName(t.Topic), p.Partition, p.Leader)
			switch {
			case p.Leader < 0:
				v.notYet("%s has no leader", tp)
			case !ok:
				v.notYet("%s: its leader, broker %d, did not describe it as its leader", tp, p.Leader)
			default:
				checkISR(v, tp, lp, stopping)
			}
		}
	}
}

// checkISR judges one partition by its leader's replicas and ISR.
func checkISR(v *restartVerdict, tp string, lp kmsg.MetadataResponseTopicPartition, stopping int32) {
	if stopping < 0 {
		if len(lp.ISR) < len(lp.Replicas) {
			v.notYet("%s has %d of %d replicas in sync (replicas %s, in sync %s)", tp, len(lp.ISR), len(lp.Replicas), joinIDs(lp.Replicas), joinIDs(lp.ISR))
		}
		return
	}
	if !slices.Contains(lp.Replicas, stopping) {
		return
	}
	left := 0
	for _, id := range lp.ISR {
		if id != stopping {
			left++
		}
	}
	if need := len(lp.Replicas)/2 + 1; left < need {
		v.notYet("%s would keep %d of %d replicas in sync without broker %d, fewer than the majority %d (in sync %s)",
			tp, left, len(lp.Replicas), stopping, need, joinIDs(lp.ISR))
	}
}

// leaderView returns the partition as its leader describes it, if the
// leader answered and says it leads.
func leaderView(views map[int32]*kmsg.MetadataResponse, topic string, partition, leader int32) (kmsg.MetadataResponseTopicPartition, bool) {
	md, ok := views[leader]
	if !ok {
		return kmsg.MetadataResponseTopicPartition{}, false
	}
	for _, t := range md.Topics {
		if topicName(t.Topic) != topic {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition == partition && p.Leader == leader {
				return p, true
			}
		}
	}
	return kmsg.MetadataResponseTopicPartition{}, false
}

// checkMoves refuses while partitions are being reassigned.
func checkMoves(ctx context.Context, cl *kgo.Client, v *restartVerdict) {
	resp, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(ctx, cl)
	if err != nil {
		v.notYet("could not list reassignments: %v", err)
		return
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		v.notYet("could not list reassignments: %v", err)
		return
	}
	n := 0
	for _, t := range resp.Topics {
		n += len(t.Partitions)
	}
	if n > 0 {
		v.notYet("%d partition reassignments are in progress (floe partition list)", n)
	}
}

func topicName(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
