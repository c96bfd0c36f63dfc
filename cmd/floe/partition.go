package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	addCommand("partition", "move partitions between brokers (reassign, list, cancel)", runPartition)
	addCommand("broker", "list brokers or decommission one", runBroker)
}

const partitionUsage = `usage: floe partition <action> [flags]

actions:
  reassign   move a partition to new replicas:
               --topic T --partition P --replicas 1,2,4 [--wait]
  cancel     cancel a move in progress: --topic T --partition P
  list       moves in progress: replicas, adding, removing

flags:
  --brokers  comma-separated seed brokers (default 127.0.0.1:9092)
  --command-config  Kafka client properties file (TLS, SASL; docs/security.md)
  --timeout  how long to wait (default 10s; with --wait, for the move to finish)
`

func runPartition(args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || args[0] == "help" {
		fmt.Fprint(os.Stderr, partitionUsage)
		return errUsage
	}
	action := args[0]
	fs, af := newAdminFlags("floe partition "+action, partitionUsage)
	topic := fs.String("topic", "", "topic")
	part := fs.Int("partition", -1, "partition")
	replicas := fs.String("replicas", "", "new replica broker ids, comma-separated, preferred leader first")
	wait := fs.Bool("wait", false, "reassign: wait until the move has finished")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	conn, err := af.connect()
	if err != nil {
		return err
	}
	defer conn.close()
	adm, ctx := conn.adm, conn.ctx
	switch action {
	case "reassign", "cancel":
		if *topic == "" || *part < 0 {
			return fmt.Errorf("--topic and --partition are required")
		}
		var ids []int32
		if action == "reassign" {
			if ids, err = parseIDs(*replicas); err != nil {
				return fmt.Errorf("--replicas: %v", err)
			}
		}
		req := kadm.AlterPartitionAssignmentsReq{}
		req.Assign(*topic, int32(*part), ids)
		resp, err := adm.AlterPartitionAssignments(ctx, req)
		if err != nil {
			return err
		}
		for _, ps := range resp {
			for _, p := range ps {
				if p.Err != nil {
					return fmt.Errorf("%s-%d: %v", p.Topic, p.Partition, p.Err)
				}
			}
		}
		if action == "cancel" || !*wait {
			fmt.Printf("%s-%d: %s accepted\n", *topic, *part, action)
			return nil
		}
		return waitMoved(ctx, adm, *topic, int32(*part))
	case "list":
		topics, err := adm.ListTopics(ctx)
		if err != nil {
			return err
		}
		moves, err := adm.ListPartitionReassignments(ctx, topics.TopicsSet())
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tREPLICAS\tADDING\tREMOVING")
		for _, p := range moves.Sorted() {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", p.Topic, p.Partition, joinIDs(p.Replicas), joinIDs(p.AddingReplicas), joinIDs(p.RemovingReplicas))
		}
		return tw.Flush()
	}
	fmt.Fprintf(os.Stderr, "floe partition: unknown action %q\n\n%s", action, partitionUsage)
	return errUsage
}

// waitMoved polls until the partition no longer has a move in progress.
func waitMoved(ctx context.Context, adm *kadm.Client, topic string, partition int32) error {
	for {
		moves, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {partition: {}}})
		if err != nil {
			return err
		}
		if _, busy := moves[topic][partition]; !busy {
			fmt.Printf("%s-%d: moved\n", topic, partition)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s-%d: still moving after the timeout", topic, partition)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

const brokerUsage = `usage: floe broker <action> [flags]

actions:
  list                 brokers: id, address, rack, controller
  decommission ID      move every replica off broker ID, then drop it from metadata

flags:
  --brokers  comma-separated seed brokers (default 127.0.0.1:9092)
  --command-config  Kafka client properties file (TLS, SASL; docs/security.md)
  --timeout  how long to wait (default 10s)
`

func runBroker(args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || args[0] == "help" {
		fmt.Fprint(os.Stderr, brokerUsage)
		return errUsage
	}
	action := args[0]
	rest := args[1:]
	var id int32 = -1
	if action == "decommission" {
		var err error
		if id, rest, err = brokerIDArg("floe broker decommission", rest); err != nil {
			return err
		}
	}
	conn, err := connectAdmin("floe broker "+action, brokerUsage, rest)
	if err != nil {
		return err
	}
	defer conn.close()
	adm, cl, ctx := conn.adm, conn.cl, conn.ctx
	switch action {
	case "list":
		md, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tADDRESS\tRACK\tCONTROLLER")
		for _, b := range md.Brokers {
			rack := ""
			if b.Rack != nil {
				rack = *b.Rack
			}
			ctl := ""
			if b.NodeID == md.Controller {
				ctl = "yes"
			}
			fmt.Fprintf(tw, "%d\t%s:%d\t%s\t%s\n", b.NodeID, b.Host, b.Port, rack, ctl)
		}
		return tw.Flush()
	case "decommission":
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if resp.ErrorMessage != nil && *resp.ErrorMessage != "" {
				return fmt.Errorf("%s (%s)", *resp.ErrorMessage, kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error).Message)
			}
			return fmt.Errorf("broker %d: %v", id, err)
		}
		fmt.Printf("broker %d: decommissioning; its replicas move away (watch with floe partition list)\n", id)
		return nil
	}
	fmt.Fprintf(os.Stderr, "floe broker: unknown action %q\n\n%s", action, brokerUsage)
	return errUsage
}

// adminFlags are the flags of the commands that manage the cluster over
// Kafka (floe partition, broker, controller): the seed brokers, the
// client properties file and how long to wait.
type adminFlags struct {
	brokers, commandConfig *string
	timeout                *time.Duration
}

// newAdminFlags is the flag set of command (e.g. "floe broker list"),
// which prints usage on a bad flag, with the admin flags on it.
func newAdminFlags(command, usage string) (*flag.FlagSet, *adminFlags) {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	return fs, &adminFlags{
		brokers:       fs.String("brokers", "127.0.0.1:9092", "comma-separated seed brokers"),
		commandConfig: fs.String("command-config", "", commandConfigUsage),
		timeout:       fs.Duration("timeout", 10*time.Second, "how long to wait"),
	}
}

// adminConn is an admin command's clients and its context, which ends
// after --timeout.
type adminConn struct {
	adm     *kadm.Client
	cl      *kgo.Client
	ctx     context.Context
	timeout time.Duration
	cancel  context.CancelFunc
}

// close cancels the context and closes the clients.
func (c *adminConn) close() {
	c.cancel()
	c.cl.Close()
}

// connect, after the flags are parsed, makes the clients and the context.
func (af *adminFlags) connect() (*adminConn, error) {
	adm, cl, err := adminClient(*af.brokers, *af.commandConfig)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *af.timeout)
	return &adminConn{adm: adm, cl: cl, ctx: ctx, timeout: *af.timeout, cancel: cancel}, nil
}

// connectAdmin parses args and connects, for a command with no flags of
// its own.
func connectAdmin(command, usage string, args []string) (*adminConn, error) {
	fs, af := newAdminFlags(command, usage)
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	return af.connect()
}

// brokerIDArg takes a broker id, the first of command's arguments rest.
func brokerIDArg(command string, rest []string) (int32, []string, error) {
	if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		return 0, rest, fmt.Errorf("usage: %s ID [flags]", command)
	}
	n, err := strconv.ParseInt(rest[0], 10, 32)
	if err != nil || n <= 0 {
		return 0, rest, fmt.Errorf("bad broker id %q", rest[0])
	}
	return int32(n), rest[1:], nil
}

func adminClient(brokers, commandConfig string) (*kadm.Client, *kgo.Client, error) {
	cl, err := newKafkaClient(brokers, commandConfig)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl, nil
}

func parseIDs(s string) ([]int32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty")
	}
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad broker id %q", f)
		}
		ids = append(ids, int32(n))
	}
	return ids, nil
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}
