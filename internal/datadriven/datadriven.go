package datadriven

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of datadriven test files")

// Cmd is one command of a script.
type Cmd struct {
	Pos  string // file:line, for failure messages
	Name string
	Args []Arg
	line string
}

// Arg is one argument: positional (Key empty) or key=value.
type Arg struct {
	Key  string   // empty for a positional argument
	Vals []string // one value, or the items of key=(a,b,c)
}

// Positional returns the positional arguments, in order.
func (c *Cmd) Positional() []string {
	var out []string
	for _, a := range c.Args {
		if a.Key == "" {
			out = append(out, a.Vals[0])
		}
	}
	return out
}

// Key returns the values of key=..., and whether it was given.
func (c *Cmd) Key(k string) ([]string, bool) {
	for _, a := range c.Args {
		if a.Key == k {
			return a.Vals, true
		}
	}
	return nil, false
}

// Words returns the arguments as written, split at spaces, with no
// key=value parsing: for scripts whose arguments are free text.
func (c *Cmd) Words() []string { return strings.Fields(c.line)[1:] }

// Handler runs one command and returns its output.
type Handler func(t *testing.T, c *Cmd) string

// Run runs every block of the file at path through fn and fails the test
// at the first block whose output differs from the expected one (later
// blocks usually differ because of it; their count is reported). With
// -rewrite it rewrites the file instead.
func Run(t *testing.T, path string, fn Handler) {
	t.Helper()
	if diffs := Diff(t, path, fn); len(diffs) > 0 {
		more := ""
		if len(diffs) > 1 {
			more = fmt.Sprintf("\n(and %d more blocks differ)", len(diffs)-1)
		}
		t.Fatal(diffs[0] + more)
	}
}

// Diff runs the file and returns a description of each block whose output
// differs from the expected one (with -rewrite, it rewrites the file
// instead and returns nothing). A malformed file fails the test.
func Diff(t *testing.T, path string, fn Handler) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parse(path, string(raw))
	if err != nil {
		t.Fatal(err)
	}
	var diffs []string
	var out strings.Builder
	for _, b := range blocks {
		out.WriteString(b.before)
		if b.cmd == nil {
			continue
		}
		got := strings.TrimRight(fn(t, b.cmd), "\n")
		if got == "" {
			got = "ok"
		}
		if strings.Contains(got, "\n\n") {
			t.Fatalf("%s: output must not contain blank lines:\n%s", b.cmd.Pos, got)
		}
		out.WriteString(b.cmd.line + "\n----\n" + got + "\n")
		if !*rewrite && got != b.want {
			diffs = append(diffs, fmt.Sprintf("%s: %s\n--- want:\n%s\n--- got:\n%s", b.cmd.Pos, b.cmd.line, b.want, got))
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return diffs
}

// block is the text before a command (comments, blank lines, each with
// its newline), then the command and its expected output; the last block
// of a file may have no command.
type block struct {
	before string
	cmd    *Cmd
	want   string
}

func parse(path, text string) ([]block, error) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	var blocks []block
	var before strings.Builder
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			before.WriteString(line + "\n")
			continue
		}
		pos := fmt.Sprintf("%s:%d", path, i+1)
		if i+1 >= len(lines) || lines[i+1] != "----" {
			return nil, fmt.Errorf("%s: command without ---- separator: %q", pos, line)
		}
		cmd, err := ParseCmd(pos, line)
		if err != nil {
			return nil, err
		}
		var want []string
		for i += 2; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			want = append(want, lines[i])
		}
		i-- // the blank line after the output, if any, belongs to the next block
		blocks = append(blocks, block{before: before.String(), cmd: cmd, want: strings.Join(want, "\n")})
		before.Reset()
	}
	if before.Len() > 0 {
		blocks = append(blocks, block{before: before.String()})
	}
	return blocks, nil
}

// ParseCmd parses one command line: a name, then arguments separated by
// spaces, each positional or key=value or key=(a,b,c).
func ParseCmd(pos, line string) (*Cmd, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return nil, fmt.Errorf("%s: empty command", pos)
	}
	c := &Cmd{Pos: pos, Name: fields[0], line: line}
	for _, f := range fields[1:] {
		key, val, hasKey := strings.Cut(f, "=")
		if !hasKey {
			c.Args = append(c.Args, Arg{Vals: []string{f}})
			continue
		}
		if !strings.HasPrefix(val, "(") {
			c.Args = append(c.Args, Arg{Key: key, Vals: []string{val}})
			continue
		}
		if !strings.HasSuffix(val, ")") {
			return nil, fmt.Errorf("%s: unterminated list in %q", pos, f)
		}
		inner := strings.TrimSuffix(strings.TrimPrefix(val, "("), ")")
		var vals []string
		if inner != "" {
			vals = strings.Split(inner, ",")
		}
		c.Args = append(c.Args, Arg{Key: key, Vals: vals})
	}
	return c, nil
}
