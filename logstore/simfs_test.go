package logstore

import (
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/floe-broker/floe/internal/datadriven"
)

// TestSimFSScript runs testdata/simfs_crash: the crash semantics of SimFS,
// one readable step at a time.
func TestSimFSScript(t *testing.T) {
	fsys := NewSimFS(rand.New(rand.NewSource(1)))
	handles := map[string]File{}
	errStr := func(err error) string {
		if err == nil {
			return "ok"
		}
		return "error: " + err.Error()
	}
	datadriven.Run(t, "testdata/simfs_crash", func(t *testing.T, c *datadriven.Cmd) string {
		cmd, args := c.Name, c.Words()
		arg := func(i int) string {
			if i < len(args) {
				return args[i]
			}
			return ""
		}
		num := func(i int) int64 {
			n, err := strconv.ParseInt(arg(i), 10, 64)
			if err != nil {
				t.Fatalf("%s: bad number %q", cmd, arg(i))
			}
			return n
		}
		h := handles[arg(0)]
		switch cmd {
		case "mkdir":
			return errStr(fsys.MkdirAll(arg(0)))
		case "create", "open":
			var f File
			var err error
			if cmd == "create" {
				f, err = fsys.Create(arg(0))
			} else {
				f, err = fsys.Open(arg(0))
			}
			if err == nil {
				handles[arg(0)] = f
			}
			return errStr(err)
		case "write":
			_, err := h.Write([]byte(strings.Join(args[1:], " ")))
			return errStr(err)
		case "sync":
			return errStr(h.Sync())
		case "truncate":
			return errStr(h.Truncate(num(1)))
		case "close":
			return errStr(h.Close())
		case "read": // through the open handle
			buf := make([]byte, 1<<10)
			n, err := h.ReadAt(buf, 0)
			if err != nil && !errors.Is(err, io.EOF) {
				return errStr(err)
			}
			return fmt.Sprintf("%q", buf[:n])
		case "cat": // by name, as a fresh open would see it
			data, err := fsys.ReadFile(arg(0))
			if err != nil {
				return errStr(err)
			}
			return fmt.Sprintf("%q", data)
		case "durable":
			data, err := fsys.ReadDurable(arg(0))
			if err != nil {
				return errStr(err)
			}
			return fmt.Sprintf("%q", data)
		case "remove":
			return errStr(fsys.Remove(arg(0)))
		case "rename":
			return errStr(fsys.Rename(arg(0), arg(1)))
		case "syncdir":
			return errStr(fsys.SyncDir(arg(0)))
		case "ls":
			names, err := fsys.List(arg(0))
			if err != nil {
				return errStr(err)
			}
			if len(names) == 0 {
				return "<empty>"
			}
			return strings.Join(names, " ")
		case "crash":
			modes := map[string]CrashMode{"random": CrashRandom, "lose-all": CrashLoseAll,
				"keep-all": CrashKeepAll, "torn-last": CrashTornLast}
			mode, ok := modes[arg(0)]
			if !ok {
				t.Fatalf("unknown crash mode %q", arg(0))
			}
			fsys.CrashWith(mode)
			return "ok"
		case "fail":
			op, ok := ParseOp(arg(0))
			if !ok {
				t.Fatalf("unknown op %q", arg(0))
			}
			fsys.FailNext(op, arg(1), nil)
			return "ok"
		case "flip":
			return errStr(fsys.FlipBit(arg(0), num(1), uint(num(2))))
		case "damage":
			return errStr(fsys.TruncateFile(arg(0), num(1)))
		}
		t.Fatalf("unknown command %q", cmd)
		return ""
	})
}

// TestSimFSRandomCrashKeepsPrefix checks the CrashRandom model against a
// direct reading of it: after a crash every file holds its synced bytes
// followed by a prefix of what was written after them, and every synced
// directory entry survives. It runs many seeds so both "lost" and "torn"
// outcomes occur, and checks that they do.
func TestSimFSRandomCrashKeepsPrefix(t *testing.T) {
	var sawLost, sawTorn, sawKept int
	for seed := int64(0); seed < 300; seed++ {
		fsys := NewSimFS(rand.New(rand.NewSource(seed)))
		must(t, fsys.MkdirAll("d"))
		must(t, fsys.SyncDir(""))
		f, err := fsys.Create("d/f")
		must(t, err)
		must(t, fsys.SyncDir("d"))
		writeStr(t, f, "synced|")
		must(t, f.Sync())
		tail := "one|two|three|"
		for _, w := range []string{"one|", "two|", "three|"} {
			writeStr(t, f, w)
		}
		fsys.Crash()
		got, err := fsys.ReadFile("d/f")
		must(t, err)
		s := string(got)
		if !strings.HasPrefix(s, "synced|") || !strings.HasPrefix(tail, s[len("synced|"):]) {
			t.Fatalf("seed %d: %q is not synced data plus a prefix of the tail", seed, s)
		}
		rest := s[len("synced|"):]
		switch {
		case rest == "":
			sawLost++
		case rest == tail || strings.HasSuffix(rest, "|"):
			sawKept++
		default:
			sawTorn++
		}
		if _, err := f.Write([]byte("x")); !errors.Is(err, ErrClosed) {
			t.Fatalf("seed %d: write on a handle from before the crash: %v, want ErrClosed", seed, err)
		}
	}
	if sawLost == 0 || sawTorn == 0 || sawKept == 0 {
		t.Fatalf("outcomes lost=%d torn=%d kept=%d: every kind should occur", sawLost, sawTorn, sawKept)
	}
}

// TestSimFSFailProb checks probabilistic fault injection fails some
// operations, leaves them without effect, and is reproducible from the seed.
func TestSimFSFailProb(t *testing.T) {
	run := func(seed int64) (string, int) {
		fsys := NewSimFS(rand.New(rand.NewSource(seed)))
		f, err := fsys.Create("f")
		must(t, err)
		fsys.SetFailProb(OpWrite, 0.5)
		fails := 0
		for i := 0; i < 100; i++ {
			if _, err := f.Write([]byte{byte('a' + i%26)}); err != nil {
				if !errors.Is(err, ErrInjected) {
					t.Fatalf("unexpected error %v", err)
				}
				fails++
			}
		}
		data, err := fsys.ReadFile("f")
		must(t, err)
		if len(data) != 100-fails {
			t.Fatalf("file has %d bytes after %d successful writes", len(data), 100-fails)
		}
		return string(data), fails
	}
	a, fa := run(7)
	b, fb := run(7)
	if a != b || fa != fb {
		t.Fatal("same seed gave different faults")
	}
	if fa == 0 || fa == 100 {
		t.Fatalf("p=0.5 failed %d of 100 writes", fa)
	}
}

func must(t tb, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeStr(t tb, f File, s string) {
	t.Helper()
	if _, err := f.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}
