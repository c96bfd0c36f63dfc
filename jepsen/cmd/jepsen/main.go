package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/floe-broker/floe/jepsen/cluster"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "run":
		err = run(ctx, os.Args[2:], false)
	case "smoke":
		err = run(ctx, os.Args[2:], true)
	case "check":
		err = recheck(os.Args[2:])
	case "clean":
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		err = cluster.Clean(cctx, os.Stderr, "", "")
	case "-h", "--help", "help":
		usage()
		return
	default:
		usage()
		os.Exit(2)
	}
	var invalid errInvalid
	switch {
	case err == nil:
	case errors.As(err, &invalid):
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		os.Exit(2)
	}
}

// errInvalid is a run whose checkers did not all say valid.
type errInvalid struct{ verdict, dir string }

func (e errInvalid) Error() string { return fmt.Sprintf("checkers say %s; see %s", e.verdict, e.dir) }

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  jepsen run [flags]     one run against a Docker cluster (jepsen run -h for flags)
  jepsen smoke [flags]   a run of at most 5 minutes
  jepsen check DIR       re-check a run directory's history.jsonl
  jepsen clean           remove containers, networks and data left by any run
`)
}
