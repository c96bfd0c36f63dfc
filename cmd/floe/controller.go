package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	addCommand("controller", "the controller quorum: describe, add-voter, remove-voter", runController)
}

const controllerUsage = `usage: floe controller <action> [flags]

actions:
  describe           the controller group: leader, term, voters, observers
  add-voter ID       make broker ID (joined, caught up) a controller voter
  remove-voter ID    make controller voter ID a learner (it keeps the metadata)

One change at a time; each is answered once committed. A change that is
not safe now (another in progress, a learner not caught up, no live
quorum left after a removal) is refused with the reason and changes
nothing.

flags:
  --brokers  comma-separated seed brokers (default 127.0.0.1:9092)
  --command-config  Kafka client properties file (TLS, SASL; docs/security.md)
  --timeout  how long to wait (default 10s)
`

func runController(args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || args[0] == "help" {
		fmt.Fprint(os.Stderr, controllerUsage)
		return errUsage
	}
	action, rest := args[0], args[1:]
	var id int32
	switch action {
	case "describe":
	case "add-voter", "remove-voter":
		var err error
		if id, rest, err = brokerIDArg("floe controller "+action, rest); err != nil {
			return err
		}
	default:
		fmt.Fprintf(os.Stderr, "floe controller: unknown action %q\n\n%s", action, controllerUsage)
		return errUsage
	}
	conn, err := connectAdmin("floe controller "+action, controllerUsage, rest)
	if err != nil {
		return err
	}
	defer conn.close()
	adm, cl, ctx := conn.adm, conn.cl, conn.ctx
	switch action {
	case "add-voter":
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.VoterID, req.TimeoutMillis, req.AckWhenCommitted = id, int32(conn.timeout.Milliseconds()), true
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if err := voterErr(id, resp.ErrorCode, resp.ErrorMessage); err != nil {
			return err
		}
		fmt.Printf("broker %d: now a controller voter\n", id)
		return nil
	case "remove-voter":
		req := kmsg.NewPtrRemoveRaftVoterRequest()
		req.VoterID = id
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if err := voterErr(id, resp.ErrorCode, resp.ErrorMessage); err != nil {
			return err
		}
		fmt.Printf("broker %d: no longer a controller voter (still a learner)\n", id)
		return nil
	}
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return err
	}
	if md.Controller < 0 {
		return errors.New("no controller leader known yet; try again")
	}
	// Only the controller's leader knows how far each member's log reaches.
	resp, err := describeQuorumReq().RequestWith(ctx, cl.Broker(int(md.Controller)))
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	return printQuorum(resp)
}

func voterErr(id int32, code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	if msg != nil && *msg != "" {
		return fmt.Errorf("%s (%s)", *msg, err.(*kerr.Error).Message)
	}
	return fmt.Errorf("broker %d: %v", id, err)
}

func describeQuorumReq() *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, t)
	return req
}

func printQuorum(resp *kmsg.DescribeQuorumResponse) error {
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return errors.New("unexpected DescribeQuorum answer")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return err
	}
	fmt.Printf("leader %d, term %d, commit index %d\n", p.LeaderID, p.LeaderEpoch, p.HighWatermark)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tROLE\tLOG END")
	for _, v := range p.CurrentVoters {
		fmt.Fprintf(tw, "%d\tvoter\t%d\n", v.ReplicaID, v.LogEndOffset)
	}
	for _, o := range p.Observers {
		fmt.Fprintf(tw, "%d\tlearner\t%d\n", o.ReplicaID, o.LogEndOffset)
	}
	return tw.Flush()
}
