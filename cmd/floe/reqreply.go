package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/reqreply"
)

func init() {
	addCommand("request", "send each stdin line as a request and print its reply (request/reply)", runRequest)
	addCommand("reply", "answer the requests of a topic as a consumer group member (request/reply)", runReply)
}

const requestUsage = `usage: floe request TOPIC --reply-topic INBOX [flags] < lines

Each line of stdin becomes one request written to TOPIC, with Spring
Kafka's reply headers (kafka_replyTopic, kafka_replyPartition,
kafka_correlationId; docs/patterns.md); its reply's value is printed on a
line of its own, in order. Replies come to --reply-partition of the
existing topic INBOX. Flags (in any order with TOPIC):
  --reply-topic      the inbox topic (required)
  --reply-partition  the inbox partition (default 0)
  --timeout          how long each request waits for its reply (default 10s)
  --isolation-level  read_uncommitted (default) or read_committed: use
                     read_committed with a transactional responder (floe
                     reply --transactional-id), to see committed replies only
  --brokers          comma-separated seed brokers (default 127.0.0.1:9092)
  --command-config   Kafka client properties (TLS, SASL): see docs/security.md

The exit status is 1 if a request got no reply in time or an error reply
(the responder's message goes to stderr).
`

const replyUsage = `usage: floe reply TOPIC --group GROUP [flags]

Answers the requests written to TOPIC as a member of consumer group GROUP
(members of one group share the requests), replying to the topic,
partition and correlation id each request names. The reply's value is the
request's value, or with --exec the standard output (one trailing newline
dropped) of a shell command given the request's value on standard input;
a command that fails sends an error reply with its standard error.
Flags (in any order with TOPIC):
  --group             the consumer group (required)
  --exec              shell command computing each reply
  --count             stop after answering this many requests
  --transactional-id  answer each batch of requests in one transaction with
                      its offsets (exactly-once replies for read_committed
                      requesters); each responder of a group needs its own id
  --session-timeout   the group session timeout: how long the requests of a
                      responder that died wait for another member (default
                      45s, franz-go's)
  --brokers           comma-separated seed brokers (default 127.0.0.1:9092)
  --command-config    Kafka client properties (TLS, SASL): see docs/security.md
  --timeout           how long to wait for the cluster (default 10s)

Ctrl-C (or SIGTERM) stops cleanly, committing what was answered. A request
answered but not yet committed when the responder dies is answered again
by the next member: without --transactional-id its first reply stays
visible too (at least once); with it, the first reply is aborted
(exactly once, read read_committed). Restart a responder that died with
the same --transactional-id: that aborts its open transaction at once,
which otherwise holds back read_committed readers of the reply partition
until the transaction times out (10s).
`

// clientOpts are the client options of --brokers and --command-config.
func (cf *clientFlags) clientOpts() ([]kgo.Opt, error) {
	seeds := splitList(*cf.brokers)
	if len(seeds) == 0 {
		return nil, usagef("--brokers: no broker given")
	}
	sec, err := commandConfigOpts(*cf.commandConfig)
	if err != nil {
		return nil, err
	}
	return append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, sec...), nil
}

func runRequest(args []string) error {
	return requestMain(context.Background(), args, os.Stdin, os.Stdout, os.Stderr)
}

func requestMain(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("floe request", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, requestUsage) }
	cf := addClientFlags(fs, 10*time.Second)
	topic := fs.String("topic", "", "topic to send requests to")
	inbox := fs.String("reply-topic", "", "the inbox topic replies come to")
	part := fs.Int("reply-partition", 0, "the inbox partition")
	isolation := fs.String("isolation-level", "read_uncommitted", "read_uncommitted or read_committed")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	name, err := topicArg("request", *topic, rest)
	if err != nil {
		return err
	}
	if *inbox == "" {
		return usagef("--reply-topic: required")
	}
	opts, err := cf.clientOpts()
	if err != nil {
		return err
	}
	switch *isolation {
	case "read_committed":
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	case "read_uncommitted":
	default:
		return usagef("--isolation-level %q: want read_uncommitted or read_committed", *isolation)
	}
	sctx, cancel := context.WithTimeout(ctx, *cf.timeout)
	q, err := reqreply.NewRequester(sctx, *inbox, int32(*part), opts...)
	cancel()
	if err != nil {
		return cf.explain(err)
	}
	defer q.Close()
	failed := 0
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		rctx, cancel := context.WithTimeout(ctx, *cf.timeout)
		r, err := q.Request(rctx, name, nil, append([]byte{}, sc.Bytes()...))
		cancel()
		if err != nil {
			failed++
			fmt.Fprintf(errOut, "request %q: %v\n", sc.Text(), err)
			fmt.Fprintln(out)
			continue
		}
		fmt.Fprintf(out, "%s\n", r.Value)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d requests failed", failed)
	}
	return nil
}

func runReply(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return replyMain(ctx, args)
}

func replyMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("floe reply", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, replyUsage) }
	cf := addClientFlags(fs, 10*time.Second)
	topic := fs.String("topic", "", "topic whose requests to answer")
	group := fs.String("group", "", "the consumer group")
	command := fs.String("exec", "", "shell command computing each reply")
	count := fs.Int("count", 0, "stop after answering this many requests")
	txnID := fs.String("transactional-id", "", "answer in transactions under this id (exactly once)")
	session := fs.Duration("session-timeout", 45*time.Second, "the consumer group session timeout")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	name, err := topicArg("reply", *topic, rest)
	if err != nil {
		return err
	}
	if *group == "" {
		return usagef("--group: required")
	}
	opts, err := cf.clientOpts()
	if err != nil {
		return err
	}
	if *count < 0 {
		return usagef("--count %d: want 0 or more", *count)
	}
	if *session <= 0 {
		return usagef("--session-timeout %v: want more than 0", *session)
	}
	opts = append(opts, kgo.SessionTimeout(*session))
	handler := func(hctx context.Context, r *kgo.Record) ([]byte, error) {
		if *command == "" {
			return r.Value, nil
		}
		return runReplyCommand(hctx, *command, r.Value)
	}
	var resp *reqreply.Responder
	if *txnID != "" {
		resp, err = reqreply.NewTransactionalResponder(name, *group, *txnID, handler, opts...)
	} else {
		resp, err = reqreply.NewResponder(name, *group, handler, opts...)
	}
	if err != nil {
		return err
	}
	if err := resp.RunN(ctx, *count); err != nil && !errors.Is(err, context.Canceled) {
		return cf.explain(err)
	}
	return nil
}

// runReplyCommand runs command with in on its standard input and returns
// its standard output, one trailing newline dropped.
func runReplyCommand(ctx context.Context, command string, in []byte) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return bytes.TrimSuffix(out, []byte("\n")), nil
}
