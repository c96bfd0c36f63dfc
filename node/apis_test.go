package node

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/kafka"
)

// apiHeader is what an api_*.go file's header says it serves.
type apiHeader struct {
	key, min, max int16
}

// apiHeaderLine matches "// Name (key N), versions A-B" and
// "// Name (key N), version A".
var apiHeaderLine = regexp.MustCompile(`(?m)^// \w+ \(key (\d+)\), versions? (\d+)(?:-(\d+))?`)

// apiFileHeaders reads the header of every node/api_*.go file.
func apiFileHeaders(t *testing.T) map[string]apiHeader {
	t.Helper()
	files, err := filepath.Glob("api_*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no api_*.go files: %v", err)
	}
	out := map[string]apiHeader{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m := apiHeaderLine.FindSubmatch(src)
		if m == nil {
			t.Errorf("%s: no header \"// Name (key N), versions A-B\"", f)
			continue
		}
		num := func(b []byte) int16 {
			n, err := strconv.ParseInt(string(b), 10, 16)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			return int16(n)
		}
		h := apiHeader{key: num(m[1]), min: num(m[2])}
		h.max = h.min
		if len(m[3]) > 0 {
			h.max = num(m[3])
		}
		out[f] = h
	}
	return out
}

// handlerFile is the base name of the file that defines h.
func handlerFile(h handler) string {
	pc := reflect.ValueOf(h).Pointer()
	file, _ := runtime.FuncForPC(pc).FileLine(pc)
	return filepath.Base(file)
}

// TestAPITable: the table of served APIs (apis.go) and what is served
// agree. Every entry has a handler, a range kmsg can decode, and a handler
// defined in an api_*.go file whose header names the entry's key and
// versions; every api_*.go file's API has an entry.
func TestAPITable(t *testing.T) {
	headers := apiFileHeaders(t)
	listed := map[string]bool{}
	for k, a := range apis {
		key, name := int16(k), kmsg.NameForKey(int16(k))
		if a.serve == nil {
			if a.min != 0 || a.max != 0 {
				t.Errorf("%s (key %d): versions %d-%d but no handler", name, key, a.min, a.max)
			}
			continue
		}
		req := kmsg.RequestForKey(key)
		if req == nil {
			t.Errorf("key %d: kmsg does not know it", key)
			continue
		}
		if a.min < 0 || a.max < a.min || a.max > req.MaxVersion() {
			t.Errorf("%s: versions %d-%d; kmsg decodes 0-%d", name, a.min, a.max, req.MaxVersion())
		}
		file := handlerFile(a.serve)
		h, ok := headers[file]
		switch {
		case !ok:
			t.Errorf("%s: handler defined in %s, not in an api_*.go file", name, file)
		case listed[file]:
			t.Errorf("%s: %s serves another entry too: one API per file", name, file)
		case h != apiHeader{key: key, min: a.min, max: a.max}:
			t.Errorf("%s: the table says key %d versions %d-%d, %s's header says key %d versions %d-%d",
				name, key, a.min, a.max, file, h.key, h.min, h.max)
		}
		listed[file] = true
	}
	for _, f := range sortedKeys(headers) {
		if !listed[f] {
			t.Errorf("%s serves key %d, which has no entry in the table (apis.go)", f, headers[f].key)
		}
	}
}

// TestVersionsFollowTheTable: Versions lists exactly the served entries,
// in key order, and HandleRequest routes by the table.
func TestVersionsFollowTheTable(t *testing.T) {
	vs := Versions()
	n := 0
	for k, a := range apis {
		if a.serve == nil {
			continue
		}
		if n >= len(vs) || vs[n] != (APIRange{Key: int16(k), Min: a.min, Max: a.max}) {
			t.Fatalf("Versions()[%d] = %+v, want key %d %d-%d", n, vs[min(n, len(vs)-1)], k, a.min, a.max)
		}
		n++
	}
	if n != len(vs) {
		t.Fatalf("Versions has %d entries, the table %d", len(vs), n)
	}
	for _, key := range []int16{-1, kmsg.MaxKey + 1, 32767, int16(kmsg.ApiVersions)} {
		if apiFor(key).serve != nil {
			t.Errorf("key %d has a handler", key)
		}
	}
}

// TestCompatibilityDocListsEveryAPI keeps docs/compatibility.md true: its
// API table must list exactly the APIs served (this table and the protocol
// server's own, kafka.ServerAPIs), with their names and version ranges.
func TestCompatibilityDocListsEveryAPI(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "docs", "compatibility.md"))
	if err != nil {
		t.Fatal(err)
	}
	begin, end := strings.Index(string(src), "<!-- api-table"), strings.Index(string(src), "<!-- end api-table -->")
	if begin < 0 || end < begin {
		t.Fatal("docs/compatibility.md: no api-table markers")
	}
	row := regexp.MustCompile(`(?m)^\| (\d+) \| (\w+) \| (\d+)-(\d+) \|`)
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(src[begin:end]), -1) {
		documented[strings.Join(m[1:], " ")] = true
	}
	served := map[string]bool{}
	for _, r := range Versions() {
		served[fmt.Sprintf("%d %s %d %d", r.Key, kmsg.NameForKey(r.Key), r.Min, r.Max)] = true
	}
	for _, r := range kafka.ServerAPIs() {
		served[fmt.Sprintf("%d %s %d %d", r.Key, kmsg.NameForKey(r.Key), r.MinVersion, r.MaxVersion)] = true
	}
	for s := range served {
		if !documented[s] {
			t.Errorf("docs/compatibility.md does not list served API %q (key name min max)", s)
		}
	}
	for s := range documented {
		if !served[s] {
			t.Errorf("docs/compatibility.md lists %q (key name min max), which is not served", s)
		}
	}
}
