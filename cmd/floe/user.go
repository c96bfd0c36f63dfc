package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/internal/kadmin"
)

func init() {
	addCommand("user", "create, delete or list SCRAM users", runUser)
}

const userUsage = `usage: floe user <action> [flags] [name ...]

actions:
  create NAME   --password-stdin  (the password is read from standard input,
                                   never from the command line)
                --mechanism M     SCRAM-SHA-256, SCRAM-SHA-512 or both,
                                  comma-separated (default both)
                --iterations N    PBKDF2 iterations, 4096-16384 (default 8192)
                Creating a user that exists replaces its password.
  delete NAME   --mechanism M     (default: every mechanism the user has)
  list [NAME...]                  users, mechanisms and iterations

common flags:
  --brokers         comma-separated seed brokers (default 127.0.0.1:9092)
  --command-config  Kafka client properties file (TLS, SASL; docs/security.md)
  --timeout         how long to wait for the cluster (default 10s)

The client salts and hashes the password (PBKDF2); the broker stores only
the salt, the iteration count and the keys derived from them. A user's
credential works for SCRAM with its mechanism and for PLAIN.
`

func runUser(args []string) error { return userMain(args, os.Stdin, os.Stdout) }

func userMain(args []string, in io.Reader, out io.Writer) error {
	action, fs, cf, err := beginAction("user", userUsage, []string{"create", "delete", "list"}, args, 10*time.Second)
	if action == "" {
		return err
	}
	mech := fs.String("mechanism", "", "SCRAM-SHA-256, SCRAM-SHA-512 or both, comma-separated")
	iterations := fs.Int("iterations", 8192, "PBKDF2 iterations (4096-16384)")
	passwordStdin := fs.Bool("password-stdin", false, "read the password from standard input")
	names, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	mechs, err := parseScramMechanisms(*mech)
	if err != nil {
		return err
	}
	var run func(ctx context.Context, adm *kadm.Client) error
	switch action {
	case "create":
		if len(names) != 1 {
			return usagef("create: name one user")
		}
		if !*passwordStdin {
			return usagef("create: give the password on standard input with --password-stdin (never on the command line)")
		}
		if *iterations < kadmin.SCRAMIterationsMin || *iterations > kadmin.SCRAMIterationsMax {
			return usagef("--iterations must be within 4096-16384")
		}
		password, err := readPassword(in)
		if err != nil {
			return err
		}
		if len(mechs) == 0 {
			mechs = []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512}
		}
		run = func(ctx context.Context, adm *kadm.Client) error {
			return userCreate(ctx, adm, names[0], password, mechs, int32(*iterations), out)
		}
	case "delete":
		if len(names) != 1 {
			return usagef("delete: name one user")
		}
		run = func(ctx context.Context, adm *kadm.Client) error { return userDelete(ctx, adm, names[0], mechs, out) }
	case "list":
		run = func(ctx context.Context, adm *kadm.Client) error { return userList(ctx, adm, names, out) }
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *cf.timeout)
	defer cancel()
	return cf.explain(run(ctx, kadm.NewClient(cl)))
}

func parseScramMechanisms(s string) ([]kadm.ScramMechanism, error) {
	var out []kadm.ScramMechanism
	for _, m := range splitList(s) {
		mech, ok := kadmin.ParseSCRAMMechanism(strings.ToUpper(m))
		if !ok {
			return nil, usagef("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", m)
		}
		out = append(out, mech)
	}
	return out, nil
}

// readPassword reads the first line of in (without its line ending).
func readPassword(in io.Reader) (string, error) {
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading the password: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", usagef("empty password on standard input")
	}
	return line, nil
}

func userCreate(ctx context.Context, adm *kadm.Client, name, password string, mechs []kadm.ScramMechanism, iterations int32, out io.Writer) error {
	if err := kadmin.UpsertSCRAM(ctx, adm, name, password, iterations, mechs); err != nil {
		return userErr(name, err)
	}
	fmt.Fprintf(out, "user %s: %s credential set\n", name, mechNames(mechs))
	return nil
}

func userDelete(ctx context.Context, adm *kadm.Client, name string, mechs []kadm.ScramMechanism, out io.Writer) error {
	if len(mechs) == 0 {
		desc, err := adm.DescribeUserSCRAMs(ctx, name)
		if err != nil {
			return err
		}
		d, ok := desc[name]
		if !ok || d.Err != nil {
			return fmt.Errorf("user %s: %w", name, kafkaErr(orNotFound(d.Err), d.ErrMessage))
		}
		for _, ci := range d.CredInfos {
			mechs = append(mechs, ci.Mechanism)
		}
	}
	if err := kadmin.DeleteSCRAM(ctx, adm, name, mechs); err != nil {
		return userErr(name, err)
	}
	fmt.Fprintf(out, "user %s: %s credential deleted\n", name, mechNames(mechs))
	return nil
}

func orNotFound(err error) error {
	if err == nil {
		return kerr.ResourceNotFound
	}
	return err
}

// userErr words an error of a change to the user: the broker's refusal
// names the user.
func userErr(name string, err error) error {
	var r *kadmin.Refused
	if errors.As(err, &r) {
		return fmt.Errorf("user %s: %w", name, kafkaErr(r.Err, r.Message))
	}
	return err
}

func mechNames(ms []kadm.ScramMechanism) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.String())
	}
	return strings.Join(out, " and ")
}

func userList(ctx context.Context, adm *kadm.Client, names []string, out io.Writer) error {
	desc, err := adm.DescribeUserSCRAMs(ctx, names...)
	if err != nil {
		return err
	}
	users := slices.Sorted(maps.Keys(desc))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tMECHANISM\tITERATIONS")
	var failed error
	for _, u := range users {
		d := desc[u]
		if d.Err != nil {
			failed = firstErr(failed, fmt.Errorf("user %s: %w", u, kafkaErr(d.Err, d.ErrMessage)))
			continue
		}
		for _, ci := range d.CredInfos {
			fmt.Fprintf(tw, "%s\t%s\t%d\n", u, ci.Mechanism, ci.Iterations)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return failed
}
