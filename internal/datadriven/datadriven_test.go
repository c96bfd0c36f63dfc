package datadriven

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseCmd(t *testing.T) {
	c, err := ParseCmd("x:1", "add-nodes 3 voters=(1,2,3) learners=() index=10 prevote=true")
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "add-nodes" || strings.Join(c.Positional(), " ") != "3" {
		t.Fatalf("bad parse: %+v", c)
	}
	if v, ok := c.Key("voters"); !ok || strings.Join(v, " ") != "1 2 3" {
		t.Fatalf("voters: %v %v", v, ok)
	}
	if v, ok := c.Key("learners"); !ok || len(v) != 0 {
		t.Fatalf("learners: %v %v", v, ok)
	}
	if v, _ := c.Key("index"); len(v) != 1 || v[0] != "10" {
		t.Fatalf("index: %v", v)
	}
	if _, ok := c.Key("absent"); ok {
		t.Fatal("an absent key was found")
	}
	if w := strings.Join(c.Words(), " "); w != "3 voters=(1,2,3) learners=() index=10 prevote=true" {
		t.Fatalf("words: %q", w)
	}
	for _, bad := range []string{"cmd voters=(1,2", "   "} {
		if _, err := ParseCmd("x:1", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseRejectsMalformedFiles(t *testing.T) {
	for _, text := range []string{
		"cmd\nexpected\n",      // no separator
		"cmd",                  // separator missing at the end of the file
		"cmd a=(1\n----\nok\n", // bad argument
	} {
		if _, err := parse("f", text); err == nil {
			t.Errorf("%q parsed", text)
		}
	}
}

// script is a file with comments, blank lines, a multi-line output, an
// empty output (read as "ok") and one wrong expectation.
const script = `# a comment

echo a b
----
a b

lines x=(1,2,3)
----
1
2
3

# kept
quiet
----
ok

echo wrong
----
right
`

// echo answers echo with its words, lines with one line per value of x,
// and quiet with nothing.
func echo(t *testing.T, c *Cmd) string {
	switch c.Name {
	case "echo":
		return strings.Join(c.Words(), " ")
	case "lines":
		x, _ := c.Key("x")
		return strings.Join(x, "\n") + "\n"
	case "quiet":
		return ""
	}
	t.Fatalf("%s: unknown command %q", c.Pos, c.Name)
	return ""
}

func TestDiffFindsEachDifferentBlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	diffs := Diff(t, path, echo)
	if len(diffs) != 1 || !strings.HasPrefix(diffs[0], path+":18: echo wrong\n--- want:\nright\n--- got:\nwrong") {
		t.Fatalf("diffs: %q", diffs)
	}
}

func TestRewriteKeepsTheFileButTheOutputs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	*rewrite = true
	diffs := Diff(t, path, echo)
	*rewrite = false
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(script, "echo wrong\n----\nright\n", "echo wrong\n----\nwrong\n", 1)
	if len(diffs) != 0 || string(got) != want {
		t.Fatalf("rewrite gave %d diffs and:\n%s\nwant:\n%s", len(diffs), got, want)
	}
	Run(t, path, echo) // the rewritten file passes
}
