package ui

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestShow(t *testing.T) {
	for _, c := range []struct {
		in, format, wantFormat, wantText string
	}{
		{`{"a":1}`, "auto", "json", "{\n  \"a\": 1\n}"},
		{`[1,2]`, "auto", "json", "[\n  1,\n  2\n]"},
		{`42`, "auto", "text", "42"}, // a bare JSON scalar reads better as text
		{"héllo\nworld", "auto", "text", "héllo\nworld"},
		{"\x00\x01\xff", "auto", "hex", "00000000  00 01 ff"},
		{`{"a":`, "json", "hex", "(not valid JSON, shown as hex)"},
		{"abc", "hex", "hex", "00000000  61 62 63"},
		{"a\xffb", "text", "text", "a\uFFFDb"},
	} {
		got := show([]byte(c.in), c.format)
		if got.Format != c.wantFormat || !strings.HasPrefix(got.Text, c.wantText) || got.Size != len(c.in) {
			t.Errorf("show(%q, %s) = %s %q, want %s starting %q", c.in, c.format, got.Format, got.Text, c.wantFormat, c.wantText)
		}
	}
	if got := show(nil, "auto"); got.Format != "null" {
		t.Errorf("show(nil) = %+v", got)
	}
	big := show([]byte(strings.Repeat("x", displayBytesMax+10)), "text")
	if len(big.Text) > displayBytesMax+100 || !strings.Contains(big.Text, "10 more bytes") {
		t.Errorf("a big value is not cut: %d bytes", len(big.Text))
	}
}

func TestLagRings(t *testing.T) {
	l := newLagRings(3, 2)
	t0 := time.Unix(1000, 0)
	for i := 0; i < 5; i++ {
		l.add("u", "g", t0.Add(time.Duration(i)*time.Second), int64(10-i))
	}
	got := l.get("u", "g")
	if len(got) != 3 || got[0].lag != 8 || got[2].lag != 6 {
		t.Fatalf("ring keeps the last 3: %+v", got)
	}
	// Two reads within lagSampleGap make one sample, the later value.
	l.add("u", "g", t0.Add(4*time.Second+lagSampleGap/2), 1)
	if got := l.get("u", "g"); len(got) != 3 || got[2].lag != 1 {
		t.Fatalf("close samples merged: %+v", got)
	}
	if len(l.get("v", "g")) != 0 {
		t.Fatal("rings are per user")
	}
	l.add("v", "g", t0, 1)
	l.add("w", "g", t0, 1) // third ring: the oldest (u) goes
	if len(l.get("u", "g")) != 0 || len(l.get("w", "g")) != 1 {
		t.Fatal("ring count not capped")
	}
}

func TestLagChart(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := lagChart([]lagSample{{t0, 60}, {t0.Add(time.Second), 30}, {t0.Add(3 * time.Second), 0}})
	if len(c.Dots) != 3 || c.MaxLabel != "60" || !strings.Contains(c.Summary, "went from 60 to 0") {
		t.Fatalf("chart %+v", c)
	}
	for i := 1; i < len(c.Dots); i++ {
		if c.Dots[i].X <= c.Dots[i-1].X || c.Dots[i].Y <= c.Dots[i-1].Y {
			t.Fatalf("falling lag must draw right and down: %+v", c.Dots)
		}
	}
	if c.Dots[0].Y != chartPadT || c.Dots[2].Y != chartH-chartPadB {
		t.Fatalf("peak at the top, zero at the axis: %+v", c.Dots)
	}
	if lagChart(nil).Points != "" {
		t.Fatal("no samples, no line")
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/topics": "/topics", "/groups/g?x=1": "/groups/g?x=1", "": "/", "//evil.example/": "/",
		"https://evil.example/": "/", "/\\evil.example": "/", "/login?next=/": "/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClassify(t *testing.T) {
	for err, want := range map[error]int{
		kerr.TopicAuthorizationFailed:                      http.StatusForbidden,
		fmt.Errorf("x: %w", kerr.GroupAuthorizationFailed): http.StatusForbidden,
		kerr.SaslAuthenticationFailed:                      http.StatusUnauthorized,
		kerr.UnknownTopicOrPartition:                       http.StatusNotFound,
		kerr.TopicAlreadyExists:                            http.StatusConflict,
		kerr.InvalidPartitions:                             http.StatusBadRequest,
		kerr.InvalidReplicationFactor:                      http.StatusBadRequest,
		badf("nope"):                                       http.StatusBadRequest,
		kerr.NotLeaderForPartition:                         http.StatusBadGateway,
		errors.New("connection refused"):                   http.StatusBadGateway,
		errNoRaftSource:                                    http.StatusServiceUnavailable,
	} {
		if got, _ := classify(err); got != want {
			t.Errorf("classify(%v) = %d, want %d", err, got, want)
		}
	}
}

func TestCheckNames(t *testing.T) {
	for _, ok := range []string{"a", "orders.v1_x-y", strings.Repeat("a", 249)} {
		if checkTopicName(ok) != nil {
			t.Errorf("topic %q refused", ok)
		}
	}
	for _, bad := range []string{"", ".", "..", "a b", "a/b", strings.Repeat("a", 250), "ü"} {
		if checkTopicName(bad) == nil {
			t.Errorf("topic %q accepted", bad)
		}
	}
	if checkGroupName("g\x01") == nil || checkGroupName("") == nil || checkGroupName("billing") != nil {
		t.Error("group name check")
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestRaftProblems: a leader's members with their lag, and what flags a
// partition (the browser and HTTP tests run one broker, where nothing lags).
func TestRaftProblems(t *testing.T) {
	g := RaftGroup{Topic: "t", Partition: 0, Term: 5, Lead: 1, Role: "StateLeader", LastIndex: 100, Voters: []uint64{1, 2, 3},
		Members: []RaftMember{
			{ID: 1, Match: 100, State: "StateReplicate", RecentActive: true},
			{ID: 2, Match: 97, State: "StateReplicate", RecentActive: true}, // in flight: lagging, not behind
			{ID: 3, Match: 40, State: "StateReplicate", RecentActive: false},
		}}
	rows := memberRows(g)
	if len(rows) != 3 || !rows[0].Self || rows[0].Lag != 0 || rows[1].Lag != 3 || rows[1].Behind || rows[2].Lag != 60 || !rows[2].Behind {
		t.Fatalf("member rows %+v", rows)
	}
	row := raftPartitionRow{Topic: "t", Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Local: &raftLocal{RaftGroup: g, Rows: rows}}
	got := strings.Join(partitionProblems(&row), "; ")
	if got != "1 replica not in sync; member 3 behind (StateReplicate, 60 entries)" {
		t.Fatalf("problems: %q", got)
	}
	g.Members[1].State = "StateSnapshot" // being sent a snapshot: behind whatever its activity
	row = raftPartitionRow{Leader: -1, Replicas: []int32{1, 2}, Offline: []int32{2},
		Local: &raftLocal{RaftGroup: RaftGroup{Fenced: true, Damaged: true}, Rows: memberRows(g)}}
	got = strings.Join(partitionProblems(&row), "; ")
	want := "no leader; offline replicas: 2; local replica vote-fenced; local replica under repair; member 2 behind (StateSnapshot, 3 entries); member 3 behind (StateReplicate, 60 entries)"
	if got != want {
		t.Fatalf("problems:\n got %q\nwant %q", got, want)
	}
	if p := partitionProblems(&raftPartitionRow{Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}); len(p) != 0 {
		t.Fatalf("a healthy partition: %v", p)
	}
}

func TestDLQOf(t *testing.T) {
	sr := shownRecord{Headers: []shownHeader{
		{Key: "trace", Value: show([]byte("t1"), "auto")},
		{Key: dlqHeaderTopic, Value: show([]byte("orders"), "auto")},
		{Key: dlqHeaderPartition, Value: show([]byte("2"), "auto")},
		{Key: dlqHeaderOffset, Value: show([]byte("17"), "auto")},
		{Key: dlqHeaderGroup, Value: show([]byte("billing"), "auto")},
		{Key: dlqHeaderCount, Value: show([]byte("5"), "auto")},
		{Key: dlqHeaderReason, Value: show([]byte("delivery-limit"), "auto")},
		{Key: dlqHeaderTime, Value: show([]byte("1800000000000"), "auto")},
	}}
	d := dlqOf(sr)
	if d.Topic != "orders" || d.Group != "billing" || d.Count != "5" || d.Reason != "delivery-limit" || d.Time != "2027-01-15 08:00:00.000" ||
		d.Source != "/topics/orders/messages?from=offset&limit=1&offset=17&partition=2" || len(d.Other) != 1 || d.Other[0].Key != "trace" {
		t.Fatalf("dlqOf: %+v", d)
	}
	// A bad topic header links nowhere (it would name a path).
	sr.Headers[1].Value = show([]byte("../acls"), "auto")
	if d := dlqOf(sr); d.Source != "" {
		t.Fatalf("link from a bad topic header: %q", d.Source)
	}
}
