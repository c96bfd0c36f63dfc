package itest

// The README's "Using Floe with Kafka clients" section, run as printed:
// the kcat commands and the Go program between the readme-test markers
// run against a fresh broker, and their output must equal the output the
// README shows. The one change made to them is the broker address:
// 127.0.0.1:9092 (where `make run` serves) becomes the test broker's free
// port, and the test checks that `make run` does serve on 127.0.0.1:9092.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	readmeAddr = "127.0.0.1:9092"
	moduleRoot = "../../.." // from cmd/floe/itest
)

// readmeBlock returns the fenced code block between <!-- readme-test:name -->
// and <!-- /readme-test:name --> in README.md.
func readmeBlock(t *testing.T, readme []byte, name string) string {
	t.Helper()
	re := regexp.MustCompile("(?s)<!-- readme-test:" + regexp.QuoteMeta(name) + " -->\\s*```[a-z]*\\n(.*?)```\\s*<!-- /readme-test:" + regexp.QuoteMeta(name) + " -->")
	m := re.FindSubmatch(readme)
	if m == nil {
		t.Fatalf("README.md has no code block between the readme-test:%s markers", name)
	}
	return string(m[1])
}

func TestReadme(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(moduleRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	checkMakeRunServesReadmeAddr(t)
	b := start(t)

	t.Run("kcat", func(t *testing.T) {
		var lines []string
		for _, l := range strings.Split(readmeBlock(t, readme, "kcat"), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
		if len(lines) == 0 {
			t.Fatal("no kcat commands in the README")
		}
		var last []byte
		for _, line := range lines {
			if !strings.Contains(line, "kcat -b "+readmeAddr) {
				t.Fatalf("README command %q does not address the broker as kcat -b %s", line, readmeAddr)
			}
			last = runShell(t, strings.ReplaceAll(line, readmeAddr, b.KafkaAddr))
			if strings.Contains(line, " -L") && !strings.Contains(string(last), "broker 1 at "+b.KafkaAddr) {
				t.Fatalf("%q did not list the broker:\n%s", line, last)
			}
		}
		if want := readmeBlock(t, readme, "kcat-output"); string(last) != want {
			t.Fatalf("the last kcat command printed:\n%s\nthe README says it prints:\n%s", last, want)
		}
	})

	t.Run("go", func(t *testing.T) {
		src := readmeBlock(t, readme, "go")
		if !strings.Contains(src, `"`+readmeAddr+`"`) {
			t.Fatalf("the README's Go program does not connect to %s", readmeAddr)
		}
		out := runGoSnippet(t, strings.ReplaceAll(src, readmeAddr, b.KafkaAddr))
		if want := readmeBlock(t, readme, "go-output"); string(out) != want {
			t.Fatalf("the README's Go program printed:\n%s\nthe README says it prints:\n%s", out, want)
		}
	})
}

// checkMakeRunServesReadmeAddr checks that `make run` runs `floe serve`
// with no flags and that floe serve's default Kafka address is the one the
// README uses.
func checkMakeRunServesReadmeAddr(t *testing.T) {
	t.Helper()
	cmd := exec.Command("make", "-n", "-s", "run")
	cmd.Dir = moduleRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n run: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); !strings.HasSuffix(last, "/floe serve") {
		t.Fatalf("make run ends with %q, want `<bin>/floe serve` (no flags, so the defaults the README relies on)", last)
	}
	help, _ := exec.Command(floeBin, "serve", "-h").CombinedOutput()
	if !regexp.MustCompile(`-kafka-addr string\s+Kafka protocol listen address \(default "` + regexp.QuoteMeta(readmeAddr) + `"\)`).Match(help) {
		t.Fatalf("floe serve's default --kafka-addr is not %s:\n%s", readmeAddr, help)
	}
}

// runShell runs one README command line with bash (pipefail) and returns
// its standard output.
func runShell(t *testing.T, line string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctxFor(t, opWaitMax), "bash", "-o", "pipefail", "-c", line)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", line, err, stderr.Bytes())
	}
	return out
}

// runGoSnippet builds and runs src as the main package of a scratch module
// that requires what Floe's module requires (so franz-go resolves from the
// module cache, offline), as a reader's own module would after `go get`.
func runGoSnippet(t *testing.T, src string) []byte {
	t.Helper()
	dir := t.TempDir()
	gomod, err := os.ReadFile(filepath.Join(moduleRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gomod = regexp.MustCompile(`(?m)^module .*$`).ReplaceAll(gomod, []byte("module readmesnippet"))
	gosum, err := os.ReadFile(filepath.Join(moduleRoot, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": gomod, "go.sum": gosum, "main.go": []byte(src)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(ctxFor(t, bulkWaitMax), "go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run the README's program: %v\nstderr:\n%s", err, stderr.Bytes())
	}
	return out
}
