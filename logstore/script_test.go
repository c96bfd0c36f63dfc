package logstore

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// A tiny data-driven test format, in the style of pebble's and etcd's
// testdata scripts. A file is a sequence of blocks separated by blank lines:
//
//	# optional comment lines
//	command arg arg
//	----
//	expected output lines
//
// runScript calls do(command) for each block and compares its output with
// the expected lines. With -rewrite it writes the actual outputs back into
// the file instead of failing.

var rewrite = flag.Bool("rewrite", false, "rewrite testdata scripts with actual output")

type scriptBlock struct {
	comments []string
	command  string
	expected string
}

func parseScript(t *testing.T, file string) []scriptBlock {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []scriptBlock
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); {
		var b scriptBlock
		for i < len(lines) && (lines[i] == "" || strings.HasPrefix(lines[i], "#")) {
			if lines[i] != "" {
				b.comments = append(b.comments, lines[i])
			}
			i++
		}
		if i >= len(lines) {
			break
		}
		b.command = lines[i]
		i++
		if i >= len(lines) || lines[i] != "----" {
			t.Fatalf("%s:%d: expected ---- after %q", file, i+1, b.command)
		}
		i++
		var out []string
		for i < len(lines) && lines[i] != "" {
			out = append(out, lines[i])
			i++
		}
		b.expected = strings.Join(out, "\n")
		blocks = append(blocks, b)
	}
	return blocks
}

func runScript(t *testing.T, file string, do func(cmd string, args []string) string) {
	t.Helper()
	blocks := parseScript(t, file)
	var out strings.Builder
	for _, b := range blocks {
		fields := strings.Fields(b.command)
		got := strings.TrimRight(do(fields[0], fields[1:]), "\n")
		if got == "" {
			got = "<empty>"
		}
		if !*rewrite && got != b.expected {
			t.Errorf("%s: %s\n got:\n%s\nwant:\n%s", file, b.command, got, b.expected)
		}
		for _, c := range b.comments {
			out.WriteString(c + "\n")
		}
		out.WriteString(b.command + "\n----\n" + got + "\n\n")
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
