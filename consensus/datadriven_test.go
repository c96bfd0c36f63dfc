package consensus

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

// A tiny datadriven runner in the style of cockroachdb/datadriven. A test
// file is a sequence of blocks:
//
//	# comments and blank lines are kept as they are
//	command arg1 key=value key=(1,2,3)
//	----
//	expected output, up to the next blank line
//
// Run with -rewrite to regenerate every expected output from the code.

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of datadriven test files")

// ddCmd is one command of a script.
type ddCmd struct {
	Pos  string // file:line, for failure messages
	Name string
	Args []ddArg
}

type ddArg struct {
	Key  string   // empty for a positional argument
	Vals []string // one value, or the items of key=(a,b,c)
}

// runDataDriven runs every block of the file through fn and compares (or,
// with -rewrite, replaces) the expected output.
func runDataDriven(t *testing.T, path string, fn func(t *testing.T, c *ddCmd) string) {
	t.Helper()
	if diffs := diffDataDriven(t, path, fn); len(diffs) > 0 {
		t.Fatal(diffs[0])
	}
}

// diffDataDriven runs the file and returns a description of each block
// whose output differs from the expected one (with -rewrite, it rewrites
// the file instead and returns nothing).
func diffDataDriven(t *testing.T, path string, fn func(t *testing.T, c *ddCmd) string) []string {
	t.Helper()
	var diffs []string
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			continue
		}
		pos := fmt.Sprintf("%s:%d", path, i+1)
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s: command without ---- separator: %q", pos, line)
		}
		cmd, err := parseDDCmd(pos, line)
		if err != nil {
			t.Fatal(err)
		}
		i += 2
		var want []string
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			want = append(want, lines[i])
		}
		got := strings.TrimRight(fn(t, cmd), "\n")
		if got == "" {
			got = "ok"
		}
		if strings.Contains(got, "\n\n") {
			t.Fatalf("%s: output must not contain blank lines:\n%s", pos, got)
		}
		out.WriteString(line + "\n----\n" + got + "\n")
		if i < len(lines) {
			out.WriteString("\n")
		}
		if !*rewrite && got != strings.Join(want, "\n") {
			diffs = append(diffs, fmt.Sprintf("%s: %s\n--- want:\n%s\n--- got:\n%s", pos, line, strings.Join(want, "\n"), got))
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return diffs
}

func parseDDCmd(pos, line string) (*ddCmd, error) {
	fields := strings.Fields(line)
	c := &ddCmd{Pos: pos, Name: fields[0]}
	for _, f := range fields[1:] {
		key, val, hasKey := strings.Cut(f, "=")
		if !hasKey {
			c.Args = append(c.Args, ddArg{Vals: []string{f}})
			continue
		}
		if strings.HasPrefix(val, "(") {
			if !strings.HasSuffix(val, ")") {
				return nil, fmt.Errorf("%s: unterminated list in %q", pos, f)
			}
			inner := strings.TrimSuffix(strings.TrimPrefix(val, "("), ")")
			var vals []string
			if inner != "" {
				vals = strings.Split(inner, ",")
			}
			c.Args = append(c.Args, ddArg{Key: key, Vals: vals})
			continue
		}
		c.Args = append(c.Args, ddArg{Key: key, Vals: []string{val}})
	}
	return c, nil
}

// positional returns the positional arguments.
func (c *ddCmd) positional() []string {
	var out []string
	for _, a := range c.Args {
		if a.Key == "" {
			out = append(out, a.Vals[0])
		}
	}
	return out
}

// key returns the values of key=..., and whether it was given.
func (c *ddCmd) key(k string) ([]string, bool) {
	for _, a := range c.Args {
		if a.Key == k {
			return a.Vals, true
		}
	}
	return nil, false
}

// TestDataDrivenRunner checks the runner's own parsing.
func TestDataDrivenRunner(t *testing.T) {
	c, err := parseDDCmd("x:1", "add-nodes 3 voters=(1,2,3) learners=() index=10 prevote=true")
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "add-nodes" || len(c.positional()) != 1 || c.positional()[0] != "3" {
		t.Fatalf("bad parse: %+v", c)
	}
	if v, ok := c.key("voters"); !ok || strings.Join(v, " ") != "1 2 3" {
		t.Fatalf("voters: %v %v", v, ok)
	}
	if v, ok := c.key("learners"); !ok || len(v) != 0 {
		t.Fatalf("learners: %v %v", v, ok)
	}
	if v, _ := c.key("index"); v[0] != "10" {
		t.Fatalf("index: %v", v)
	}
	if _, err := parseDDCmd("x:1", "cmd voters=(1,2"); err == nil {
		t.Fatal("unterminated list accepted")
	}
}
