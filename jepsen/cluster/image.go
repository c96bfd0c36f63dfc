package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/floe-broker/floe/jepsen/docker"
)

// Build describes a static binary to build.
type Build struct {
	ModuleDir string // the module's root
	Pkg       string // package path relative to ModuleDir, e.g. ./cmd/floe
	Out       string // where the binary goes
	Tags      []string
}

// BuildBinary builds a static Linux binary (CGO_ENABLED=0), so it runs in
// an image FROM scratch.
func BuildBinary(ctx context.Context, log io.Writer, b Build) error {
	args := []string{"build", "-trimpath", "-o", b.Out}
	if len(b.Tags) > 0 {
		args = append(args, "-tags", strings.Join(b.Tags, ","))
	}
	args = append(args, b.Pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = b.ModuleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	cmd.Stdout, cmd.Stderr = log, log
	fmt.Fprintf(log, "$ CGO_ENABLED=0 go %s\n", strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s: %w", b.Pkg, err)
	}
	return nil
}

// BuildImage builds the image tag from the static binary at binary with
// the embedded Dockerfile (FROM scratch). The build context is a temporary
// directory holding only the Dockerfile and the binary, named floe.
func BuildImage(ctx context.Context, log io.Writer, binary, tag string) error {
	dir, err := os.MkdirTemp("", "floe-jepsen-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), docker.Dockerfile, 0o644); err != nil {
		return err
	}
	if err := copyFile(binary, filepath.Join(dir, "floe"), 0o755); err != nil {
		return err
	}
	out, err := dockerRun(ctx, execRunner{log: log}, "build", "-q", "--label", LabelKey+"=image", "-t", tag, dir)
	fmt.Fprintln(log, out)
	return err
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
