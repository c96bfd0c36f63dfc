package main

// What the client commands (floe topic, produce, consume) share: the
// --brokers and --timeout flags, flags mixed with positional arguments,
// repeatable name=value flags, usage errors, and error wording.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/internal/kadmin"
)

// brokersDefault is where a client command looks for the cluster when
// neither --brokers nor FLOE_BROKERS says.
const brokersDefault = "127.0.0.1:9092"

// clientFlags are the flags every client command takes.
type clientFlags struct {
	brokers       *string
	timeout       *time.Duration
	commandConfig *string
}

func addClientFlags(fs *flag.FlagSet, timeoutDefault time.Duration) *clientFlags {
	return &clientFlags{
		brokers:       fs.String("brokers", brokersDefault, "comma-separated seed brokers (env FLOE_BROKERS)"),
		timeout:       fs.Duration("timeout", timeoutDefault, "how long to wait for the cluster"),
		commandConfig: fs.String("command-config", "", commandConfigUsage),
	}
}

// client opens a franz-go client on the seed brokers, with the client
// properties of --command-config.
func (cf *clientFlags) client(opts ...kgo.Opt) (*kgo.Client, error) {
	return newKafkaClient(*cf.brokers, *cf.commandConfig, opts...)
}

// explain rewords an error from talking to the cluster: a deadline says
// which brokers did not answer in time.
func (cf *clientFlags) explain(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer from %s within %v (is a broker running there? see --brokers): %w", *cf.brokers, *cf.timeout, err)
	}
	return err
}

// usageError is a bad invocation: main prints it and exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string        { return e.msg }
func (e usageError) Is(target error) bool { return target == errUsage }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// parseArgs parses flags mixed with positional arguments ("floe topic
// create NAME --partitions 3" and "floe topic create --partitions 3 NAME"
// both work; "--" ends the flags), filling unset flags from the environment
// and the config file as parseFlags does. It returns the positional
// arguments.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	flagArgs, positional := splitArgs(fs, args)
	if err := parseFlags(fs, flagArgs); err != nil {
		return nil, err
	}
	return positional, nil
}

// splitArgs separates flags (with their values) from positional arguments.
// A flag it does not know is passed on for parseFlags to report.
func splitArgs(fs *flag.FlagSet, args []string) (flags, positional []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, append(positional, args[i+1:]...)
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if takesValue(fs, name) && i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return flags, positional
}

func takesValue(fs *flag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	if f == nil {
		return name == "config" // parseFlags' config file flag, added later
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// kvList is a repeatable name=value flag; a name given twice is an error.
type kvList struct {
	names  []string
	values map[string]string
}

func (l *kvList) String() string {
	parts := make([]string, len(l.names))
	for i, n := range l.names {
		parts[i] = n + "=" + l.values[n]
	}
	return strings.Join(parts, ",")
}

func (l *kvList) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return fmt.Errorf("want name=value, got %q", s)
	}
	if l.values == nil {
		l.values = map[string]string{}
	}
	if _, dup := l.values[name]; dup {
		return fmt.Errorf("%s given twice", name)
	}
	l.names = append(l.names, name)
	l.values[name] = value
	return nil
}

// listFlag is a repeatable flag whose values may also be comma-separated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	items := splitList(s)
	if len(items) == 0 {
		return fmt.Errorf("empty value")
	}
	*l = append(*l, items...)
	return nil
}

// kafkaErr words a Kafka error with the broker's message, if it sent one.
func kafkaErr(err error, msg string) error {
	if err == nil || msg == "" {
		return err
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return fmt.Errorf("%s: %s", ke.Message, msg)
	}
	return fmt.Errorf("%w: %s", err, msg)
}

// brokerErr words the broker's refusal of a kadmin request as kafkaErr
// does; any other error passes unchanged.
func brokerErr(err error) error {
	var r *kadmin.Refused
	if errors.As(err, &r) {
		return kafkaErr(r.Err, r.Message)
	}
	return err
}

// topicArg picks the one topic of floe produce and floe consume (cmd),
// named either positionally, as rpk and floe topic do, or by --topic: both
// may be given only if they agree.
func topicArg(cmd, flagTopic string, positional []string) (string, error) {
	switch {
	case len(positional) > 1:
		return "", usagef("floe %s takes one topic, got %d: %s", cmd, len(positional), strings.Join(positional, " "))
	case len(positional) == 1 && flagTopic != "" && flagTopic != positional[0]:
		return "", usagef("topic %q and --topic %q (or FLOE_TOPIC) disagree: give the topic once", positional[0], flagTopic)
	case len(positional) == 1:
		return positional[0], nil
	case flagTopic == "":
		return "", usagef("a topic is required: floe %s TOPIC (or --topic TOPIC)", cmd)
	}
	return flagTopic, nil
}

// beginAction starts every "floe NOUN ACTION [flags] [names]" command the
// same way. No action prints usage and fails (exit status 2); -h, --help or
// help prints it and succeeds, with action "". An action outside actions
// is a usage error that names them. Otherwise it returns the action and
// its flag set, named "floe NOUN ACTION" and printing the command's usage,
// with the client flags every action takes already added.
func beginAction(noun, usage string, actions []string, args []string, timeoutDefault time.Duration) (action string, fs *flag.FlagSet, cf *clientFlags, err error) {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(os.Stderr, usage)
		if len(args) == 0 {
			return "", nil, nil, errUsage
		}
		return "", nil, nil, nil
	}
	action = args[0]
	if !slices.Contains(actions, action) {
		return "", nil, nil, usagef("unknown action %q (%s; floe %s -h)", action, strings.Join(actions, ", "), noun)
	}
	fs = flag.NewFlagSet("floe "+noun+" "+action, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	return action, fs, addClientFlags(fs, timeoutDefault), nil
}
