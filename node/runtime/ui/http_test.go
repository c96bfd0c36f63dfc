package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/node/runtime/ui"
)

// TestHTTPPlaintext drives the UI's HTTP surface on a broker without
// security: statuses, CSRF, validation, JSON errors, cookie flags.
func TestHTTPPlaintext(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	br := newBrowser(t, b.ui())

	code, hdr, body := br.do(http.MethodGet, "/", nil, nil)
	if code != http.StatusOK || !strings.Contains(body, `id="health"`) || !strings.Contains(body, "broker 1") {
		t.Fatalf("GET /: %d\n%.1500s", code, body)
	}
	if hdr.Get("Content-Security-Policy") == "" || hdr.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("security headers missing: %v", hdr)
	}
	cookie := hdr.Get("Set-Cookie")
	_, port, _ := strings.Cut(b.AdminAddr(), ":")
	if !strings.HasPrefix(cookie, "floe_ui_"+port+"=") || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") {
		t.Fatalf("session cookie %q: want HttpOnly and SameSite=Strict", cookie)
	}
	if code, _ := br.get("/static/style.css"); code != http.StatusOK {
		t.Fatalf("embedded stylesheet: %d", code)
	}
	if code, body := br.get("/no/such/page"); code != http.StatusNotFound || !strings.Contains(body, "no such page") {
		t.Fatalf("unknown page: %d %.300s", code, body)
	}
	if code, body := br.get("/metrics"); code != http.StatusOK || !strings.Contains(body, "# HELP") {
		t.Fatalf("/metrics must stay the admin server's: %d", code)
	}

	_, page := br.get("/topics")
	token := csrf(t, page)
	form := url.Values{"name": {"orders"}, "partitions": {"2"}, "replication": {"1"}}
	if code, _, body := br.post("/topics", form); code != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Fatalf("create without CSRF token: %d %.300s", code, body)
	}
	form.Set("csrf", token)
	if code, _, _ := br.do(http.MethodPost, "/topics", form, map[string]string{"Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Fatalf("create from another origin: %d", code)
	}
	for name, bad := range map[string]url.Values{
		"bad name":       {"csrf": {token}, "name": {"no spaces"}, "partitions": {"1"}, "replication": {"1"}},
		"zero parts":     {"csrf": {token}, "name": {"x"}, "partitions": {"0"}, "replication": {"1"}},
		"bad config":     {"csrf": {token}, "name": {"x"}, "partitions": {"1"}, "replication": {"1"}, "configs": {"novalue"}},
		"too many repls": {"csrf": {token}, "name": {"x"}, "partitions": {"1"}, "replication": {"3"}},
		"unknown config": {"csrf": {token}, "name": {"x"}, "partitions": {"1"}, "replication": {"1"}, "configs": {"no.such.config=1"}},
	} {
		code, _, body := br.post("/topics", bad)
		if code < 400 || code >= 500 || !strings.Contains(body, `role="alert"`) {
			t.Errorf("%s: %d, want a 4xx page with the error\n%.800s", name, code, body)
		}
	}
	code, hdr, _ = br.post("/topics", form)
	if code != http.StatusSeeOther || hdr.Get("Location") != "/topics/orders?created=1" {
		t.Fatalf("create orders: %d %v", code, hdr)
	}
	if code, _, _ := br.post("/topics", form); code != http.StatusConflict {
		t.Fatalf("create orders twice: %d, want 409", code)
	}
	code, body = br.get("/topics/orders?created=1")
	if code != http.StatusOK || !strings.Contains(body, "Topic created.") || strings.Count(body, "<tr") < 3 {
		t.Fatalf("topic page: %d\n%.2000s", code, body)
	}
	// Sizes come from DescribeLogDirs, which the broker serves.
	if strings.Contains(body, `id="sizes-note"`) || !strings.Contains(body, " B</td>") {
		t.Fatalf("topic page shows no sizes (%s):\n%.3000s", between(body, `id="sizes-note">`, "</p>"), body)
	}

	// Configure, then see the value.
	if code, _, body := br.post("/topics/orders/config", url.Values{"csrf": {token}, "key": {"retention.ms"}, "value": {"123456"}, "op": {"set"}}); code != http.StatusSeeOther {
		t.Fatalf("set retention.ms: %d %.500s", code, body)
	}
	if _, body := br.get("/topics/orders"); !strings.Contains(body, "123456") {
		t.Fatalf("retention.ms not shown after set")
	}
	if code, _, _ := br.post("/topics/orders/config", url.Values{"csrf": {token}, "key": {"retention.ms"}, "value": {"x"}, "op": {"bogus"}}); code != http.StatusBadRequest {
		t.Fatalf("bad op: %d", code)
	}

	// Produce, bad then good.
	if code, _, _ := br.post("/produce", url.Values{"csrf": {token}, "topic": {"orders"}, "partition": {"-1"}, "value": {"v"}}); code != http.StatusBadRequest {
		t.Fatalf("produce to partition -1: %d", code)
	}
	if code, _, _ := br.post("/produce", url.Values{"csrf": {token}, "topic": {"orders"}, "partition": {"0"}, "headers": {"nocolon"}}); code != http.StatusBadRequest {
		t.Fatalf("produce with a bad header line: %d", code)
	}
	code, _, body = br.post("/produce", url.Values{"csrf": {token}, "topic": {"orders"}, "partition": {"1"}, "key": {"k1"},
		"value": {`{"a":1}`}, "headers": {"trace: abc"}})
	if code != http.StatusOK || !strings.Contains(body, "Produced to partition 1 at offset 0") {
		t.Fatalf("produce: %d\n%.1500s", code, body)
	}
	code, body = br.get("/topics/orders/messages?partition=1&from=offset&offset=0&key=k1")
	if code != http.StatusOK || !strings.Contains(body, "&#34;a&#34;: 1") || !strings.Contains(body, "trace") {
		t.Fatalf("browse: %d\n%.3000s", code, body)
	}
	if code, _ := br.get("/topics/orders/messages?partition=0&limit=100000"); code != http.StatusBadRequest {
		t.Fatalf("browse with limit 100000: %d", code)
	}
	if code, _ := br.get("/topics/orders/messages?partition=9"); code != http.StatusBadRequest {
		t.Fatalf("browse a missing partition: %d", code)
	}
	if code, _ := br.get("/topics/nosuch/messages"); code != http.StatusNotFound {
		t.Fatalf("browse a missing topic: %d", code)
	}

	// JSON errors.
	for path, want := range map[string]int{"/api/groups/nosuch/lag": http.StatusNotFound, "/api/groups/%01/lag": http.StatusBadRequest} {
		code, hdr, body := br.do(http.MethodGet, path, nil, nil)
		var e struct {
			Error  string `json:"error"`
			Status int    `json:"status"`
		}
		if code != want || hdr.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &e) != nil || e.Error == "" || e.Status != want {
			t.Errorf("%s: %d %q %s, want %d with a JSON error", path, code, hdr.Get("Content-Type"), body, want)
		}
	}

	// Reset of a group that has members is refused (409).
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	adm := kadm.NewClient(b.client(t, "", ""))
	var os kadm.Offsets
	os.AddOffset("orders", 1, 1, -1)
	if res, err := adm.CommitOffsets(ctx, "g0", os); err != nil || res.Error() != nil {
		t.Fatalf("commit: %v %v", err, res.Error())
	}
	if code, _, body := br.post("/groups/g0/reset", url.Values{"csrf": {token}, "topic": {"orders"}, "to": {"offset"}, "offset": {"99"}}); code != http.StatusBadRequest {
		t.Fatalf("reset beyond the end: %d %.500s", code, body)
	}
	if code, _, body := br.post("/groups/g0/reset", url.Values{"csrf": {token}, "topic": {"orders"}, "to": {"earliest"}}); code != http.StatusSeeOther {
		t.Fatalf("reset an empty group: %d %.800s", code, body)
	}
	if code, body := br.get("/api/groups/g0/lag"); code != http.StatusOK || !strings.Contains(body, `"total_lag":1`) {
		t.Fatalf("lag after reset to earliest: %d %s", code, body)
	}

	// A share group: listed with the group type, its page shows the member.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "jobs"); err != nil {
		t.Fatalf("create jobs: %v", err)
	}
	share := b.client(t, "", "", kgo.ShareGroup("sg1"), kgo.ConsumeTopics("jobs"), kgo.FetchMaxWait(200*time.Millisecond))
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	share.PollFetches(pctx) // joins the group
	pcancel()
	deadline := time.Now().Add(waitTimeout)
	for {
		_, body := br.get("/groups")
		if strings.Contains(body, `href="/share-groups/sg1"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("share group sg1 never listed:\n%.2000s", body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := br.get("/share-groups/sg1"); code != http.StatusOK || !strings.Contains(body, `id="share-members">1<`) {
		t.Fatalf("share group page: %d\n%.2000s", code, body)
	}
	if code, _ := br.get("/share-groups/nosuch"); code != http.StatusNotFound {
		t.Fatalf("missing share group: %d, want 404", code)
	}

	// Delete needs the name typed again.
	if code, _, _ := br.post("/topics/orders/delete", url.Values{"csrf": {token}, "confirm": {"nope"}}); code != http.StatusBadRequest {
		t.Fatalf("delete without confirmation: %d", code)
	}
	if code, _, body := br.post("/topics/orders/delete", url.Values{"csrf": {token}, "confirm": {"orders"}}); code != http.StatusOK || !strings.Contains(body, "Topic orders deleted.") {
		t.Fatalf("delete: %d %.500s", code, body)
	}
}

// fakeClock is a settable clock for session expiry.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestHTTPSecure: with SASL and ACLs, the login is the SASL identity, the
// broker's ACLs decide, and sessions expire.
func TestHTTPSecure(t *testing.T) {
	b := aclBroker(t, brokerOpts{})
	br := newBrowser(t, b.ui())

	code, hdr, _ := br.do(http.MethodGet, "/topics", nil, nil)
	if code != http.StatusSeeOther || hdr.Get("Location") != "/login?next=%2Ftopics" {
		t.Fatalf("GET /topics logged out: %d %v", code, hdr.Get("Location"))
	}
	if code, body := br.get("/api/groups/x/lag"); code != http.StatusUnauthorized || !strings.Contains(body, `"error"`) {
		t.Fatalf("API logged out: %d %s", code, body)
	}
	if code, _, _ := br.post("/login", url.Values{"user": {"alice"}, "password": {"alice-secret"}}); code != http.StatusForbidden {
		t.Fatalf("login without a form session: %d", code)
	}
	_, page := br.get("/login?next=%2Ftopics")
	token := csrf(t, page)
	if code, _, _ := br.post("/login", url.Values{"user": {"alice"}, "password": {"alice-secret"}}); code != http.StatusForbidden {
		t.Fatalf("login without CSRF token: %d", code)
	}
	code, _, body := br.post("/login", url.Values{"csrf": {token}, "user": {"alice"}, "password": {"wrong"}, "next": {"/topics"}})
	if code != http.StatusUnauthorized || !strings.Contains(body, "wrong user name or password") {
		t.Fatalf("wrong password: %d %.800s", code, body)
	}
	code, hdr, _ = br.post("/login", url.Values{"csrf": {token}, "user": {"alice"}, "password": {"alice-secret"}, "next": {"//evil.example/"}})
	if code != http.StatusSeeOther || hdr.Get("Location") != "/" {
		t.Fatalf("login: %d to %q, want 303 to / (an off-site next is dropped)", code, hdr.Get("Location"))
	}
	code, body = br.get("/topics")
	if code != http.StatusOK || !strings.Contains(body, ">public<") || strings.Contains(body, "secret") {
		t.Fatalf("alice's topics: %d\n%.2000s", code, body)
	}
	token = csrf(t, body)
	if code, body := br.get("/topics/secret"); code != http.StatusForbidden || !strings.Contains(body, "not authorized") {
		t.Fatalf("alice opens secret: %d\n%.1000s", code, body)
	}
	if code, _ := br.get("/acls"); code != http.StatusForbidden {
		t.Fatalf("alice lists ACLs: %d", code)
	}
	if code, _, body := br.post("/topics", url.Values{"csrf": {token}, "name": {"mine"}, "partitions": {"1"}, "replication": {"1"}}); code != http.StatusForbidden || !strings.Contains(body, `role="alert"`) {
		t.Fatalf("alice creates a topic: %d", code)
	}
	if code, _, _ := br.post("/logout", url.Values{"csrf": {token}}); code != http.StatusSeeOther {
		t.Fatalf("logout: %d", code)
	}
	if code, _ := br.get("/topics"); code != http.StatusSeeOther {
		t.Fatalf("after logout: %d", code)
	}

	// Expiry, on a UI with a clock the test moves.
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	srv := httptest.NewServer(ui.New(ui.Config{Addr: b.kafka, Advertised: advertised, SASLMechanism: "SCRAM-SHA-256",
		Now: clk.now, SessionIdle: time.Minute, SessionMax: time.Hour, Logger: quietLogger()}))
	defer srv.Close()
	br2 := newBrowser(t, srv.URL)
	_, page = br2.get("/login")
	if code, _, _ := br2.post("/login", url.Values{"csrf": {csrf(t, page)}, "user": {"admin"}, "password": {"admin-secret"}}); code != http.StatusSeeOther {
		t.Fatalf("admin login: %d", code)
	}
	if code, body := br2.get("/acls"); code != http.StatusOK || !strings.Contains(body, "User:alice") {
		t.Fatalf("admin lists ACLs: %d %.1000s", code, body)
	}
	for i := 0; i < 5; i++ { // activity keeps the session past its idle time...
		clk.add(50 * time.Second)
		if code, _ := br2.get("/"); code != http.StatusOK {
			t.Fatalf("active session refused after %d steps: %d", i, code)
		}
	}
	clk.add(61 * time.Second) // ...idleness ends it
	if code, _ := br2.get("/"); code != http.StatusSeeOther {
		t.Fatalf("idle session: %d, want a redirect to the login", code)
	}

	// A login the broker stops taking ends the session.
	br3 := newBrowser(t, b.ui())
	_, page = br3.get("/login")
	if code, _, _ := br3.post("/login", url.Values{"csrf": {csrf(t, page)}, "user": {"alice"}, "password": {"alice-secret"}}); code != http.StatusSeeOther {
		t.Fatalf("alice logs in again: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	adm := kadm.NewClient(b.client(t, "admin", "admin-secret"))
	res, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}, {User: "alice", Mechanism: kadm.ScramSha512}}, nil)
	if err != nil || res.AllFailed() {
		t.Fatalf("delete alice: %v %+v", err, res)
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		code, body := br3.get("/topics")
		if code == http.StatusUnauthorized && strings.Contains(body, "log in again") {
			break
		}
		if code != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("alice deleted, /topics: %d %.600s", code, body)
		}
		time.Sleep(50 * time.Millisecond) // the deletion reaches the broker's applied metadata
	}
	if code, _ := br3.get("/topics"); code != http.StatusSeeOther {
		t.Fatalf("after a refused login: %d, want a redirect to the login", code)
	}
}

// setupACLs creates public and secret as admin and lets alice read
// (and describe) public only.
// adminAndAlice is o with SASL on and two users, admin (a super user, as
// startBroker makes admin) and alice.
func adminAndAlice(o brokerOpts) brokerOpts {
	o.secure, o.users = true, map[string]string{"admin": "admin-secret", "alice": "alice-secret"}
	return o
}

// aclBroker starts a broker with adminAndAlice(o) and setupACLs's ACLs.
func aclBroker(t *testing.T, o brokerOpts) *testBroker {
	t.Helper()
	b := startBroker(t, adminAndAlice(o))
	setupACLs(t, b)
	return b
}

func setupACLs(t *testing.T, b *testBroker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	adm := kadm.NewClient(b.client(t, "admin", "admin-secret"))
	for _, topic := range []string{"public", "secret"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	acl := kadm.NewACLs().Allow("User:alice").Topics("public").Operations(kadm.OpRead, kadm.OpDescribe, kadm.OpWrite).
		ResourcePatternType(kadm.ACLPatternLiteral)
	res, err := adm.CreateACLs(ctx, acl)
	if err != nil {
		t.Fatalf("create ACLs: %v", err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create ACL: %v", r.Err)
		}
	}
}

// TestHTTPSASLSSL: beside a PLAINTEXT listener, the UI picks the SASL_SSL
// one (so it asks for a login), verifies the broker's certificate against
// the CA file, and works through it.
func TestHTTPSASLSSL(t *testing.T) {
	b := startBroker(t, brokerOpts{secure: true, tls: true, users: map[string]string{"admin": "admin-secret"}})
	br := newBrowser(t, b.ui())
	if code, _ := br.get("/"); code != http.StatusSeeOther {
		t.Fatalf("GET / logged out: %d, want the login (the SASL_SSL listener)", code)
	}
	_, page := br.get("/login")
	if code, _, body := br.post("/login", url.Values{"csrf": {csrf(t, page)}, "user": {"admin"}, "password": {"admin-secret"}}); code != http.StatusSeeOther {
		t.Fatalf("login over SASL_SSL: %d %.800s", code, body)
	}
	_, page = br.get("/topics")
	code, _, body := br.post("/topics", url.Values{"csrf": {csrf(t, page)}, "name": {"tls-topic"}, "partitions": {"1"}, "replication": {"1"}})
	if code != http.StatusSeeOther {
		t.Fatalf("create over SASL_SSL: %d %.800s", code, body)
	}
	if code, body := br.get("/topics/tls-topic"); code != http.StatusOK || !strings.Contains(body, "partitions-table") {
		t.Fatalf("topic over SASL_SSL: %d", code)
	}
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}
