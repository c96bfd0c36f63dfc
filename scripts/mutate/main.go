// Command mutate is `make mutate`: mutation testing of the simulator
// (issue 15). It copies the tree (never touching the working tree),
// applies each one-line bug of mutations.go to the copy in turn, runs the
// default simulator seeds there, and reports per mutation whether it was
// caught and at which seed. A mutation that no longer applies (its line is
// gone or not unique) fails the command before anything runs.
//
//	go run ./scripts/mutate                  every mutation, default seeds
//	go run ./scripts/mutate -only lease-too-long -v
//	go run ./scripts/mutate -list            the mutations, checked to apply
//
// It exits 1 if a mutation survived (was not caught) or did not build.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	only := flag.String("only", "", "run only the mutations whose names contain this")
	from := flag.Int("from", 0, "skip the first mutations (to split a run over several processes)")
	list := flag.Bool("list", false, "list the mutations (checked to apply) and exit")
	run := flag.String("run", "^TestSim$", "go test -run pattern")
	seeds := flag.Int("seeds", 0, "seeds for TestSim (0: its default)")
	timeout := flag.Duration("timeout", 20*time.Minute, "bound on one mutation's test run")
	verbose := flag.Bool("v", false, "print each test run's output tail")
	flag.Parse()
	if *from > 0 && *from < len(mutations) {
		mutations = mutations[*from:]
	}
	if err := mainErr(*only, *list, *run, *seeds, *timeout, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

type outcome struct {
	m      mutation
	caught bool
	seed   string // first failing seed, or how it was caught
	what   string
	took   time.Duration
}

func mainErr(only string, list bool, run string, seeds int, timeout time.Duration, verbose bool) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	var ms []mutation
	for _, m := range mutations {
		if strings.Contains(m.Name, only) {
			ms = append(ms, m)
		}
	}
	for _, m := range ms {
		if _, _, err := apply(filepath.Join(root, m.File), m); err != nil {
			return fmt.Errorf("mutation %s no longer applies: %w", m.Name, err)
		}
	}
	if list {
		for _, m := range ms {
			fmt.Printf("%-34s %-32s %s\n", m.Name, m.File, m.Why)
		}
		return nil
	}
	dir, err := os.MkdirTemp("", "floe-mutate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := copyTree(root, dir); err != nil {
		return err
	}
	fmt.Printf("mutate: %d mutations on a copy of the tree in %s\n", len(ms), dir)
	var outs []outcome
	for _, m := range ms {
		o, err := try(dir, m, run, seeds, timeout, verbose)
		if err != nil {
			return err
		}
		state := "SURVIVED"
		if o.caught {
			state = "caught"
		}
		fmt.Printf("%-34s %-8s seed %-6s %6.0fs  %s\n", m.Name, state, o.seed, o.took.Seconds(), o.what)
		outs = append(outs, o)
	}
	fmt.Println()
	fmt.Println("| Mutation | File | Class | Caught | First failing seed |")
	fmt.Println("|---|---|---|---|---|")
	survived := 0
	for _, o := range outs {
		caught := "yes"
		if !o.caught {
			caught, survived = "**no**", survived+1
		}
		fmt.Printf("| `%s` | `%s` | %s | %s | %s |\n", o.m.Name, o.m.File, o.m.Why, caught, o.seed)
	}
	if survived > 0 {
		return fmt.Errorf("%d of %d mutations survived", survived, len(outs))
	}
	return nil
}

// apply returns file's content with m applied, and the original content.
func apply(file string, m mutation) (mutated, orig []byte, err error) {
	orig, err = os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	lines := strings.Split(string(orig), "\n")
	at := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == strings.TrimSpace(m.Original) {
			if at >= 0 {
				return nil, nil, fmt.Errorf("%s: %q is on lines %d and %d", m.File, m.Original, at+1, i+1)
			}
			at = i
		}
	}
	if at < 0 {
		return nil, nil, fmt.Errorf("%s: no line %q", m.File, m.Original)
	}
	indent := lines[at][:len(lines[at])-len(strings.TrimLeft(lines[at], " \t"))]
	lines[at] = indent + m.Replacement
	return []byte(strings.Join(lines, "\n")), orig, nil
}

// failRE matches a seed's failure: TestSim logs "FAIL seed N: ..." as soon
// as the seed ends (a parallel subtest's "--- FAIL" line comes only when
// all have ended).
var failRE = regexp.MustCompile(`(?:--- FAIL: TestSim/seed=|: FAIL seed )(\d+)`)

// try runs the seeds with m applied to the copy in dir, then restores it.
func try(dir string, m mutation, run string, seeds int, timeout time.Duration, verbose bool) (outcome, error) {
	file := filepath.Join(dir, m.File)
	mutated, orig, err := apply(file, m)
	if err != nil {
		return outcome{}, err
	}
	if err := os.WriteFile(file, mutated, 0o644); err != nil {
		return outcome{}, err
	}
	defer os.WriteFile(file, orig, 0o644)
	// -v streams each seed's verdict as it ends; the first failing seed
	// ends the run (go test's -failfast does not stop parallel subtests
	// already queued).
	if m.Run != "" {
		run = m.Run
	}
	pkg := "./sim"
	if m.Pkg != "" {
		pkg = m.Pkg
	}
	args := []string{"test", pkg, "-count=1", "-v", "-run", run, "-timeout", timeout.String()}
	if seeds > 0 && m.Pkg == "" {
		args = append(args, "-seeds", strconv.Itoa(seeds))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // go test and its test binary
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return outcome{}, err
	}
	cmd.Stderr = cmd.Stdout
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return outcome{}, err
	}
	o := outcome{m: m}
	var out strings.Builder
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	stopped := false
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if v := firstViolation(line); v != "" && o.what == "" {
			o.what = v
		}
		if sm := failRE.FindStringSubmatch(line); sm != nil && !stopped {
			o.caught, o.seed, stopped = true, sm[1], true
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	runErr := cmd.Wait()
	o.took = time.Since(start)
	text := out.String()
	if verbose {
		fmt.Println(tail(text, 40))
	}
	switch {
	case o.caught:
	case strings.Contains(text, "[build failed]") || strings.Contains(text, "[setup failed]"):
		return o, fmt.Errorf("mutation %s does not build:\n%s", m.Name, tail(text, 20))
	case runErr == nil:
		o.seed, o.what = "-", "every seed passed"
	default:
		o.caught, o.seed = true, "none"
		o.what = "failed without a failing seed: " + firstLine(text, "coverage:", "panic:", "FAIL")
	}
	return o, nil
}

func firstViolation(text string) string {
	for _, l := range strings.Split(text, "\n") {
		if i := strings.Index(l, "VIOLATION "); i >= 0 && !strings.Contains(l, " | ") {
			return strings.TrimSpace(l[i+len("VIOLATION "):])
		}
	}
	return ""
}

func firstLine(text string, prefixes ...string) string {
	for _, l := range strings.Split(text, "\n") {
		for _, p := range prefixes {
			if strings.Contains(l, p) {
				return strings.TrimSpace(l)
			}
		}
	}
	return ""
}

func tail(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// copyTree copies the files git knows (tracked, and untracked but not
// ignored) from root to dir.
func copyTree(root, dir string) error {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, name := range strings.Split(string(out), "\x00") {
		if name == "" {
			continue
		}
		src := filepath.Join(root, name)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := copyFile(src, dst, st.Mode()); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode.Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
