package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestHTTPRaftAndPartitions: the Raft health page and its JSON, and adding
// partitions from the topic page (validation, CSRF, the new count).
func TestHTTPRaftAndPartitions(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	br := newBrowser(t, b.ui())
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := kadm.NewClient(b.client(t, "", "")).CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatalf("create orders: %v", err)
	}

	code, body := br.get("/raft")
	if code != http.StatusOK || !strings.Contains(body, `id="raft-node">1<`) || !strings.Contains(body, `id="raft-controller-table"`) {
		t.Fatalf("GET /raft: %d\n%.3000s", code, body)
	}
	// Broker 1 leads both partitions: its own member row, 0 behind.
	table := between(body, `id="raft-table"`, "</table>")
	if strings.Count(table, ">orders</a>") != 2 || !strings.Contains(table, "StateLeader, term ") || !strings.Contains(table, "broker 1 (leader)") {
		t.Fatalf("raft table:\n%s", table)
	}
	if code, body := br.get("/raft?topic=orders"); code != http.StatusOK || strings.Contains(body, "__consumer_offsets") {
		t.Fatalf("raft filtered to orders: %d", code)
	}
	if code, _ := br.get("/raft?topic=no%20spaces"); code != http.StatusBadRequest {
		t.Fatalf("raft with a bad topic filter: %d, want 400", code)
	}
	code, hdr, js := br.do(http.MethodGet, "/api/raft?topic=orders", nil, nil)
	var d struct {
		Node       int32
		Controller int32
		Partitions []struct {
			Topic  string
			Leader int32
			Epoch  int32
			Local  *struct {
				Term uint64
				Role string
				Rows []struct {
					ID  uint64
					Lag uint64
				}
			}
		}
	}
	if code != http.StatusOK || hdr.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(js), &d) != nil {
		t.Fatalf("GET /api/raft: %d %s", code, js)
	}
	if d.Node != 1 || d.Controller != 1 || len(d.Partitions) != 2 {
		t.Fatalf("/api/raft: %+v", d)
	}
	for _, p := range d.Partitions {
		if p.Local == nil || p.Local.Role != "StateLeader" || p.Local.Term == 0 || uint64(p.Epoch) != p.Local.Term || len(p.Local.Rows) != 1 || p.Local.Rows[0].Lag != 0 {
			t.Fatalf("/api/raft partition: %+v local %+v", p, p.Local)
		}
	}
	if code, _, body := br.do(http.MethodGet, "/api/raft?topic=%01", nil, nil); code != http.StatusBadRequest || !strings.Contains(body, `"status":400`) {
		t.Fatalf("/api/raft bad filter: %d %s", code, body)
	}

	// Adding partitions.
	_, page := br.get("/topics/orders")
	if !strings.Contains(page, `id="partitions-form"`) {
		t.Fatalf("topic page has no add-partitions form")
	}
	token := csrf(t, page)
	if code, _, _ := br.post("/topics/orders/partitions", url.Values{"count": {"4"}}); code != http.StatusForbidden {
		t.Fatalf("add partitions without CSRF: %d", code)
	}
	for name, tc := range map[string]struct {
		count string
		want  int
	}{
		"not a number": {"four", http.StatusBadRequest},
		"zero":         {"0", http.StatusBadRequest},
		"too many":     {"1000000", http.StatusBadRequest},
		"the same":     {"2", http.StatusBadRequest},
		"fewer":        {"1", http.StatusBadRequest},
	} {
		code, _, body := br.post("/topics/orders/partitions", url.Values{"csrf": {token}, "count": {tc.count}})
		if code != tc.want || !strings.Contains(body, `role="alert"`) {
			t.Errorf("%s: %d, want %d with the error\n%.600s", name, code, tc.want, between(body, `role="alert"`, "</div>"))
		}
	}
	if code, _, _ := br.post("/topics/nosuch/partitions", url.Values{"csrf": {token}, "count": {"3"}}); code != http.StatusNotFound {
		t.Fatalf("add partitions to a missing topic: %d", code)
	}
	code, hdr, _ = br.post("/topics/orders/partitions", url.Values{"csrf": {token}, "count": {"4"}})
	if code != http.StatusSeeOther || hdr.Get("Location") != "/topics/orders?partitioned=1" {
		t.Fatalf("add partitions: %d %v", code, hdr.Get("Location"))
	}
	code, body = br.get("/topics/orders?partitioned=1")
	if code != http.StatusOK || !strings.Contains(body, "Partitions added.") || strings.Count(between(body, `id="partitions-table"`, "</table>"), "<tr") != 5 {
		t.Fatalf("topic page after adding: %d\n%.2000s", code, body)
	}
}

// TestHTTPDeadLetters: the dead-letter list names the share group's
// topic, and the browser shows a copy's origin, count and reason.
func TestHTTPDeadLetters(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	br := newBrowser(t, b.ui())
	deadLetter(t, b, "billing", "jobs", "dlq.jobs", "good", "bad")

	code, body := br.get("/dead-letters")
	if code != http.StatusOK || !strings.Contains(body, `href="/dead-letters/dlq.jobs"`) || !strings.Contains(between(body, `id="dlq-groups"`, "</table>"), "dlq.jobs") {
		t.Fatalf("GET /dead-letters: %d\n%.3000s", code, body)
	}
	if code, body := br.get("/share-groups/billing"); code != http.StatusOK || !strings.Contains(body, `href="/dead-letters/dlq.jobs"`) {
		t.Fatalf("share group page without its dead-letter topic: %d\n%.2000s", code, between(body, `<dl class="stats">`, "</dl>"))
	}
	code, body = br.get("/dead-letters/dlq.jobs?partition=0&from=offset&offset=0")
	rows := between(body, `id="dlq-records"`, "</table>")
	for _, want := range []string{"jobs partition 0 offset 1", "rejected", ">billing<", "t-bad", "&#34;order&#34;: &#34;bad&#34;"} {
		if code != http.StatusOK || !strings.Contains(rows, want) {
			t.Fatalf("dead letters of dlq.jobs: %d, no %q in\n%s", code, want, rows)
		}
	}
	if strings.Contains(rows, "__dlq.errors.topic") {
		t.Fatalf("dead-letter headers shown as the record's own:\n%s", rows)
	}
	if code, _ := br.get("/dead-letters/dlq.jobs?partition=0&limit=0"); code != http.StatusBadRequest {
		t.Fatalf("dead letters with limit 0: %d", code)
	}
	if code, _ := br.get("/dead-letters/dlq.nosuch"); code != http.StatusNotFound {
		t.Fatalf("a missing dead-letter topic: %d", code)
	}
}

// TestHTTPAuditAndRefusals: with SASL, ACLs and the audit log on, the
// audit viewer finds a denial by principal and result; a user without
// DESCRIBE on the cluster, READ on __audit_log or ALTER on a topic is
// refused the Raft page, the audit log and adding partitions.
func TestHTTPAuditAndRefusals(t *testing.T) {
	b := aclBroker(t, brokerOpts{audit: true})
	alice := login(t, b, "alice", "alice-secret")
	if code, body := alice.get("/raft"); code != http.StatusForbidden || !strings.Contains(body, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("alice opens /raft: %d %.500s", code, body)
	}
	if code, body := alice.get("/api/raft"); code != http.StatusForbidden || !strings.Contains(body, `"status":403`) {
		t.Fatalf("alice opens /api/raft: %d %s", code, body)
	}
	if code, _ := alice.get("/topics/secret"); code != http.StatusForbidden { // a denial to find in the audit log
		t.Fatalf("alice opens secret: %d", code)
	}
	_, page := alice.get("/topics/public")
	if code, _, body := alice.post("/topics/public/partitions", url.Values{"csrf": {csrf(t, page)}, "count": {"3"}}); code != http.StatusForbidden || !strings.Contains(body, `role="alert"`) {
		t.Fatalf("alice adds partitions to public: %d %.500s", code, body)
	}
	if code, _ := alice.get("/audit"); code != http.StatusForbidden {
		t.Fatalf("alice opens the audit log: %d", code)
	}

	admin := login(t, b, "admin", "admin-secret")
	if code, _ := admin.get("/raft"); code != http.StatusOK {
		t.Fatalf("admin opens /raft: %d", code)
	}
	if code, _ := admin.get("/audit?result=maybe"); code != http.StatusBadRequest {
		t.Fatalf("audit with a bad result: %d", code)
	}
	if code, _ := admin.get("/audit?since=2026-02-01T00:00&until=2026-01-01T00:00"); code != http.StatusBadRequest {
		t.Fatalf("audit with until before since: %d", code)
	}
	if code, _ := admin.get("/audit?since=yesterday"); code != http.StatusBadRequest {
		t.Fatalf("audit with a bad time: %d", code)
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		code, body := admin.get("/audit?principal=alice&result=failure&operation=describe")
		table := between(body, `id="audit-table"`, "</table>")
		if code == http.StatusOK && strings.Contains(table, "User:alice") && strings.Contains(table, "topic secret") {
			if strings.Contains(table, ">success<") || strings.Contains(table, "User:admin") {
				t.Fatalf("filters let through other records:\n%s", table)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's denial never in the audit log: %d\n%.3000s", code, body)
		}
		time.Sleep(200 * time.Millisecond) // audit records reach __audit_log asynchronously
	}
	// The time bounds: nothing after tomorrow, nothing before 2000.
	tomorrow := time.Now().Add(24 * time.Hour).UTC().Format("2006-01-02T15:04")
	for _, q := range []string{"since=" + tomorrow, "until=2000-01-01T00:00"} {
		if code, body := admin.get("/audit?" + q); code != http.StatusOK || !strings.Contains(body, `id="no-audit"`) {
			t.Fatalf("audit %s: %d, want no records\n%.600s", q, code, between(body, `id="audit-summary"`, "</p>"))
		}
	}
	recent := time.Now().Add(-10 * time.Minute).UTC().Format("2006-01-02T15:04")
	soon := time.Now().Add(10 * time.Minute).UTC().Format("2006-01-02T15:04")
	if _, body := admin.get("/audit?principal=alice&result=failure&since=" + recent + "&until=" + soon); !strings.Contains(between(body, `id="audit-table"`, "</table>"), "topic secret") {
		t.Fatalf("audit between %s and %s lacks alice's denial:\n%.600s", recent, soon, between(body, `id="audit-summary"`, "</p>"))
	}
	// Newest first.
	_, body := admin.get("/audit")
	times := timesIn(between(body, `id="audit-table"`, "</table>"))
	if len(times) < 2 {
		t.Fatalf("audit log shows %d records", len(times))
	}
	for i := 1; i < len(times); i++ {
		if times[i] > times[i-1] {
			t.Fatalf("audit rows not newest first: %v", times)
		}
	}
}

// login logs user in on a fresh browser.
func login(t *testing.T, b *testBroker, user, pass string) *browser {
	t.Helper()
	br := newBrowser(t, b.ui())
	_, page := br.get("/login")
	if code, _, body := br.post("/login", url.Values{"csrf": {csrf(t, page)}, "user": {user}, "password": {pass}}); code != http.StatusSeeOther {
		t.Fatalf("%s logs in: %d %.500s", user, code, body)
	}
	return br
}

// timesIn lists the first cell of each row (the audit table's time).
func timesIn(table string) []string {
	var out []string
	for _, row := range strings.Split(table, "<tr")[1:] {
		if c := between(row, "<td>", "</td>"); c != "" {
			out = append(out, c)
		}
	}
	return out
}
