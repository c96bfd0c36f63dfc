// Command jepsen is Floe's Docker fault-injection suite: it builds a static
// floe binary and an image FROM scratch, starts a cluster of containers on a
// private network, runs a franz-go workload from the host while a nemesis
// injects faults, heals, drains, reads everything back, and checks the
// history with the simulator's checkers (jepsen/check).
//
//	jepsen run [flags]     one run; writes jepsen/out/<timestamp>/
//	jepsen smoke [flags]   a run of at most 5 minutes (what .ci/run calls)
//	jepsen check DIR       re-check DIR/history.jsonl, rewrite results and plot
//	jepsen clean           remove every container, network and data
//	                       directory any run left behind
//
// Exit status: 0 when every checker says valid, 1 when one says invalid
// or unknown, 2 when the run itself could not be carried out.
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
