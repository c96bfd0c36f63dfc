package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// LabelKey marks everything a Docker-suite run creates; the value is the
// run id.
const LabelKey = "floe.jepsen"

// runner runs host commands. Tests may replace it.
type runner interface {
	run(ctx context.Context, name string, args ...string) (string, error)
}

// execRunner runs commands with os/exec, logging each to log.
type execRunner struct{ log io.Writer }

func (e execRunner) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if e.log != nil {
		fmt.Fprintf(e.log, "$ %s %s\n", name, strings.Join(args, " "))
	}
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// Available reports whether a Docker daemon answers.
func Available(ctx context.Context) bool {
	_, err := execRunner{}.run(ctx, "docker", "info", "--format", "{{.ServerVersion}}")
	return err == nil
}

// dockerRun runs the docker CLI.
func dockerRun(ctx context.Context, r runner, args ...string) (string, error) {
	return r.run(ctx, "docker", args...)
}

// lines splits command output into non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
