package lint

import (
	"slices"
	"testing"
)

func TestIsCore(t *testing.T) {
	m := Module + "/"
	tests := []struct {
		pkg    string
		extra  []string
		core   bool
		exempt []string
	}{
		{pkg: m + "consensus", core: true},
		{pkg: m + "consensus/quorum", core: true},
		{pkg: m + "consensusx"},
		{pkg: m + "logstore", core: true, exempt: []string{"osfs*.go"}},
		{pkg: m + "logstore/segment"},
		{pkg: m + "clock", core: true, exempt: []string{"real.go"}},
		{pkg: m + "clock/x"},
		{pkg: m + "node", core: true},
		{pkg: m + "node/partition", core: true},
		{pkg: m + "node/controller/fsm", core: true},
		{pkg: m + "node/kafka"},
		{pkg: m + "node/kafka/codec"},
		{pkg: m + "node/kafkax", core: true},
		{pkg: m + "node/runtime"},
		{pkg: m + "node/admin"},
		{pkg: m + "netx"},
		{pkg: m + "sim"},
		{pkg: m + "internal/plant"},
		{pkg: m + "cmd/floe"},
		{pkg: "example.com/consensus"},
		{pkg: m + "consensus_test"},
		{pkg: m + "node/records.test"},
		{pkg: m + "consensus.test"},
		{pkg: "fixture/a", extra: []string{"fixture/..."}, core: true},
		{pkg: "fixture", extra: []string{"fixture/..."}, core: true},
		{pkg: "fixturex", extra: []string{"fixture/..."}},
		{pkg: "bad", extra: []string{"good", "bad"}, core: true},
		{pkg: "bad/sub", extra: []string{"bad"}},
	}
	for _, tt := range tests {
		core, exempt := isCore(tt.pkg, tt.extra)
		if core != tt.core || !slices.Equal(exempt, tt.exempt) {
			t.Errorf("isCore(%q, %q) = %v, %q; want %v, %q", tt.pkg, tt.extra, core, exempt, tt.core, tt.exempt)
		}
	}
}

func TestFileExempt(t *testing.T) {
	tests := []struct {
		file   string
		globs  []string
		exempt bool
	}{
		{"/src/logstore/osfs.go", []string{"osfs*.go"}, true},
		{"/src/logstore/osfs_linux.go", []string{"osfs*.go"}, true},
		{"/src/logstore/log.go", []string{"osfs*.go"}, false},
		{"/src/logstore/myosfs.go", []string{"osfs*.go"}, false},
		{"/src/clock/real.go", []string{"real.go"}, true},
		{"/src/clock/real_unix.go", []string{"real.go"}, false},
		{"/src/consensus/raft_test.go", nil, true},
		{"/src/consensus/raft.go", nil, false},
		{`C:\src\logstore\osfs.go`, []string{"osfs*.go"}, true},
		{"/root/.cache/go-build/94/948a5b-d", nil, true},
	}
	for _, tt := range tests {
		if got := fileExempt(tt.file, tt.globs); got != tt.exempt {
			t.Errorf("fileExempt(%q, %q) = %v, want %v", tt.file, tt.globs, got, tt.exempt)
		}
	}
}
