package ui_test

// Browser tests: headless Chromium (Debian's chromium package), driven by
// chromedp, walks the UI's main flows against an in-process broker. Each
// flow saves a screenshot in FLOE_UI_ARTIFACTS (default: the test's temp
// dir); FLOE_UI_DOCS_IMG=1 also copies those docs/operations.md shows to
// docs/img/.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	chromiumOnce sync.Once
	chromiumPath string
	chromiumErr  error
)

// chromium finds Debian's headless chromium, installing it with apt-get
// (bounded) when missing, as `make deps` does.
func chromium(t *testing.T) string {
	t.Helper()
	chromiumOnce.Do(func() {
		find := func() string {
			for _, n := range []string{"chromium", "chromium-browser"} {
				if p, err := exec.LookPath(n); err == nil {
					return p
				}
			}
			return ""
		}
		if chromiumPath = find(); chromiumPath != "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		apt := func(args ...string) error {
			if os.Geteuid() != 0 {
				args = append([]string{"-n", "apt-get"}, args...)
				out, err := exec.CommandContext(ctx, "sudo", args...).CombinedOutput()
				return wrapOut(err, out)
			}
			out, err := exec.CommandContext(ctx, "apt-get", args...).CombinedOutput()
			return wrapOut(err, out)
		}
		t.Log("chromium missing: installing it with apt-get")
		if err := apt("install", "-y", "-q", "chromium"); err != nil {
			if err2 := apt("update", "-q"); err2 != nil {
				chromiumErr = err2
				return
			}
			chromiumErr = apt("install", "-y", "-q", "chromium")
		}
		if chromiumPath = find(); chromiumPath == "" && chromiumErr == nil {
			chromiumErr = fmt.Errorf("apt-get install chromium left no chromium on PATH")
		}
	})
	if chromiumPath == "" {
		t.Skipf("browser tests skipped: chromium is not installed and could not be installed (%v); run `make deps`", chromiumErr)
	}
	return chromiumPath
}

func wrapOut(err error, out []byte) error {
	if err == nil {
		return nil
	}
	s := string(out)
	if len(s) > 500 {
		s = s[len(s)-500:]
	}
	return fmt.Errorf("%w: %s", err, s)
}

// newTab starts a headless browser bounded by timeout.
func newTab(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	tctx, tcancel := chromedp.NewContext(actx)
	t.Cleanup(func() { tcancel(); acancel(); cancel() })
	if err := chromedp.Do(tctx); err != nil { // start the browser now, so failures say so
		t.Fatalf("start chromium: %v", err)
	}
	return tctx
}

// adminLogsIn opens page logged out, logs in as admin on the login form it
// is sent to, and waits for sel on the page it comes back to.
func adminLogsIn(t *testing.T, ctx context.Context, page, sel string) {
	t.Helper()
	run(t, ctx, "admin logs in",
		chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS("#user"), "admin"),
		chromedp.SendKeys(chromedp.CSS("#password"), "admin-secret"+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(sel)))
}

func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatalf("location: %v", err)
	}
	return loc
}

// waitLocation polls the tab's address until ok (bounded by ctx and a
// step cap), for a navigation a key press started: chromedp's actions do
// not wait for one.
func waitLocation(t *testing.T, ctx context.Context, ok func(string) bool) string {
	t.Helper()
	var last string
	for i := 0; i < 300; i++ {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		loc, err := chromedp.Run(wctx, chromedp.Location())
		cancel()
		if err == nil {
			last = loc
			if ok(loc) {
				return loc
			}
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("waiting for the address: last %s", last)
	return ""
}

// text reads an element's text.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

// waitText polls sel's text until ok (bounded by ctx and a step cap),
// reloading the page first when reload is set.
func waitText(t *testing.T, ctx context.Context, sel string, reload bool, ok func(string) bool) string {
	t.Helper()
	var last string
	for i := 0; i < 300; i++ {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var err error
		if reload {
			err = chromedp.Do(wctx, chromedp.Reload())
		}
		if err == nil {
			err = chromedp.Do(wctx, chromedp.WaitReady(chromedp.CSS(sel)))
		}
		if err == nil {
			last, err = chromedp.Run(wctx, chromedp.Text(chromedp.CSS(sel)))
		}
		cancel()
		if err == nil && ok(last) {
			return last
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("waiting for %s: last text %q", sel, last)
	return ""
}

// screenshot saves the page as name.png in the artifact directory (and
// docs/img/ with FLOE_UI_DOCS_IMG=1).
func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
	if os.Getenv("FLOE_UI_DOCS_IMG") == "1" && docsImages[name] {
		if err := os.WriteFile(filepath.Join("..", "..", "..", "docs", "img", name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// docsImages are the screenshots docs/operations.md shows.
var docsImages = map[string]bool{"ui-overview": true, "ui-topic": true, "ui-produce": true, "ui-browse": true,
	"ui-group-lag": true, "ui-acl-denied": true, "ui-raft": true, "ui-dead-letters": true, "ui-audit": true, "ui-acls": true}

func artifactDir(t *testing.T) string {
	if d := os.Getenv("FLOE_UI_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// TestBrowserFlows walks flows 1 to 5: create a topic, produce, browse and
// find the record, watch a consumer group's lag fall, reset its offsets.
func TestBrowserFlows(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	dir := artifactDir(t)
	ctx := newTab(t, 4*time.Minute)
	kctx, kcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer kcancel()
	ui := b.ui()

	// 1. Create a topic.
	run(t, ctx, "create topic",
		chromedp.Navigate(ui+"/topics"),
		chromedp.SetValue(chromedp.CSS("#name"), "orders"),
		chromedp.SetValue(chromedp.CSS("#partitions"), "3"),
		chromedp.Click(chromedp.CSS("#create")),
		chromedp.WaitVisible(chromedp.CSS("#notice")))
	if got := text(t, ctx, "#notice"); !strings.Contains(got, "Topic created.") {
		t.Fatalf("after create: notice %q", got)
	}
	if rows := text(t, ctx, "#partitions-table tbody"); strings.Count(rows, "\n") < 2 {
		t.Fatalf("partitions table of orders: %q", rows)
	}
	screenshot(t, ctx, dir, "ui-topic")

	// 2. Produce, after filler records so the key filter has work to do.
	filler := b.client(t, "", "", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 25; i++ {
		if err := filler.ProduceSync(kctx, &kgo.Record{Topic: "orders", Partition: 0, Key: []byte("filler-" + strconv.Itoa(i)), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("filler produce: %v", err)
		}
	}
	run(t, ctx, "produce",
		chromedp.Navigate(ui+"/produce?topic=orders"),
		chromedp.SetValue(chromedp.CSS("#partition"), "0"),
		chromedp.SendKeys(chromedp.CSS("#key"), "order-42"),
		chromedp.SetValue(chromedp.CSS("#value"), `{"id":42,"item":"green tea","qty":2}`),
		chromedp.SetValue(chromedp.CSS("#headers"), "source: browser-test"),
		chromedp.Click(chromedp.CSS("#send")),
		chromedp.WaitVisible(chromedp.CSS("#produced")))
	if got := text(t, ctx, "#produced"); !strings.Contains(got, "partition 0 at offset 25") {
		t.Fatalf("produce result %q", got)
	}
	screenshot(t, ctx, dir, "ui-produce")

	// 3. Browse partition 0 from offset 0 with a key filter: the one record.
	run(t, ctx, "browse",
		chromedp.Navigate(ui+"/topics/orders/messages"),
		chromedp.SetValue(chromedp.CSS("#partition"), "0"),
		chromedp.Click(chromedp.CSS(`input[name="from"][value="offset"]`)),
		chromedp.SetValue(chromedp.CSS("#offset"), "0"),
		chromedp.SendKeys(chromedp.CSS("#key"), "order-42"),
		chromedp.Click(chromedp.CSS("#browse")),
		chromedp.WaitVisible(chromedp.CSS("#records")))
	// The page before the click shows the newest records in a #records
	// table too: wait for the filtered answer's range line, not the table.
	waitText(t, ctx, "#range", false, func(s string) bool { return strings.Contains(s, "Read 26 records") })
	rows := text(t, ctx, "#records tbody")
	if !strings.Contains(rows, `"item": "green tea"`) || !strings.Contains(rows, "browser-test") || strings.Contains(rows, "filler") {
		t.Fatalf("browse found %q", rows)
	}
	if got := text(t, ctx, "#range"); !strings.Contains(got, "Read 26 records") {
		t.Fatalf("browse range %q", got)
	}
	screenshot(t, ctx, dir, "ui-browse")

	// 4. A consumer group: 100 records, the consumer commits 40, then all;
	// the group page (refreshing itself) shows the lag fall from 60 to 0.
	if _, err := kadm.NewClient(filler).CreateTopic(kctx, 1, 1, nil, "events"); err != nil {
		t.Fatalf("create events: %v", err)
	}
	for i := 0; i < 100; i++ {
		if err := filler.ProduceSync(kctx, &kgo.Record{Topic: "events", Partition: 0, Value: []byte("e" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce events: %v", err)
		}
	}
	consumer := b.client(t, "", "", kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("events"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6*time.Second))
	var recs []*kgo.Record
	for len(recs) < 100 && kctx.Err() == nil {
		fs := consumer.PollFetches(kctx)
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
	}
	if len(recs) < 100 {
		t.Fatalf("consumed %d of 100", len(recs))
	}
	if err := consumer.CommitRecords(kctx, recs[39]); err != nil {
		t.Fatalf("commit 40: %v", err)
	}
	run(t, ctx, "open group", chromedp.Navigate(ui+"/groups/billing"), chromedp.WaitVisible(chromedp.CSS("#total-lag")))
	waitText(t, ctx, "#total-lag", true, func(s string) bool { return s == "60" })
	waitText(t, ctx, "#member-count", false, func(s string) bool { return s == "1" })
	// Flow 5's refusal: a group with members is not reset.
	run(t, ctx, "reset a live group",
		chromedp.Click(chromedp.CSS("#reset")), chromedp.WaitVisible(chromedp.CSS("#error")))
	if got := text(t, ctx, "#error"); !strings.Contains(got, "stop its consumers first") {
		t.Fatalf("reset of a live group: %q", got)
	}
	run(t, ctx, "reopen group", chromedp.Navigate(ui+"/groups/billing"), chromedp.WaitVisible(chromedp.CSS("#total-lag")))
	waitText(t, ctx, "#total-lag", false, func(s string) bool { return s == "60" })
	if err := consumer.CommitRecords(kctx, recs[99]); err != nil {
		t.Fatalf("commit 100: %v", err)
	}
	// No reload: the page's own script refreshes the lag part.
	waitText(t, ctx, "#total-lag", false, func(s string) bool { return s == "0" })
	summary := waitText(t, ctx, "#chart-summary", false, func(s string) bool { return strings.Contains(s, "went from 60 to 0") })
	t.Logf("chart: %s", summary)
	attr, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#lag-chart"), "data-samples"))
	if err != nil {
		t.Fatalf("chart samples: %v", err)
	}
	samples := attr.Value
	if n, _ := strconv.Atoi(samples); n < 2 {
		t.Fatalf("lag chart has %q samples, want at least 2", samples)
	}
	screenshot(t, ctx, dir, "ui-group-lag")

	// 5. Stop the consumer (it leaves the group), then reset to earliest.
	consumer.Close()
	waitText(t, ctx, "#group-state", true, func(s string) bool { return s == "Empty" })
	run(t, ctx, "reset offsets",
		chromedp.Click(chromedp.CSS(`input[name="to"][value="earliest"]`)),
		chromedp.Click(chromedp.CSS("#reset")),
		chromedp.WaitVisible(chromedp.CSS("#notice")))
	if got := text(t, ctx, "#notice"); !strings.Contains(got, "Offsets reset.") {
		t.Fatalf("reset notice %q", got)
	}
	waitText(t, ctx, "#total-lag", false, func(s string) bool { return s == "100" })
	screenshot(t, ctx, dir, "ui-group-reset")

	run(t, ctx, "overview", chromedp.Navigate(ui+"/"), chromedp.WaitVisible(chromedp.CSS("#health")))
	if got := text(t, ctx, "#health"); !strings.Contains(got, "Healthy") {
		t.Fatalf("overview health %q", got)
	}
	screenshot(t, ctx, dir, "ui-overview")
}

// TestBrowserLoginACL is flow 6: with SASL and ACLs on, log in (by
// keyboard) and be refused a page an ACL denies.
func TestBrowserLoginACL(t *testing.T) {
	b := aclBroker(t, brokerOpts{})
	dir := artifactDir(t)
	ctx := newTab(t, 3*time.Minute)
	ui := b.ui()

	run(t, ctx, "open topics logged out",
		chromedp.Navigate(ui+"/topics"), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	loc := location(t, ctx)
	if !strings.Contains(loc, "/login?next=%2Ftopics") {
		t.Fatalf("logged out, /topics went to %s", loc)
	}
	run(t, ctx, "wrong password",
		chromedp.SendKeys(chromedp.CSS("#user"), "alice"),
		chromedp.SendKeys(chromedp.CSS("#password"), "not-her-password"+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS("#error")))
	if got := text(t, ctx, "#error"); !strings.Contains(got, "wrong user name or password") {
		t.Fatalf("wrong password: %q", got)
	}
	screenshot(t, ctx, dir, "ui-login")
	// The keyboard alone: the user field keeps its value; Tab to the
	// password, type it and press Enter.
	run(t, ctx, "log in",
		chromedp.Focus(chromedp.CSS("#user")),
		chromedp.KeyEvent(kb.Tab),
		chromedp.KeyEvent("alice-secret"+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS("#whoami")))
	loc = location(t, ctx)
	if !strings.HasSuffix(loc, "/topics") || text(t, ctx, "#whoami") != "alice" {
		t.Fatalf("after login at %s as %q", loc, text(t, ctx, "#whoami"))
	}
	list := text(t, ctx, "#topics")
	if !strings.Contains(list, "public") || strings.Contains(list, "secret") {
		t.Fatalf("alice's topic list %q", list)
	}
	run(t, ctx, "open a denied topic",
		chromedp.Navigate(ui+"/topics/secret"), chromedp.WaitVisible(chromedp.CSS("#error")))
	if got := text(t, ctx, "#error"); !strings.Contains(got, "not authorized") || !strings.Contains(got, "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("denied page: %q", got)
	}
	screenshot(t, ctx, dir, "ui-acl-denied")
	run(t, ctx, "open the allowed topic",
		chromedp.Navigate(ui+"/topics/public"), chromedp.WaitVisible(chromedp.CSS("#partitions-table")))
}

// TestBrowserRaftDeadLetters walks the operator pages: add partitions to a
// topic from its page, read the Raft health page, then find a share
// group's dead letter and follow it to the original record (the keyboard
// alone opens it).
func TestBrowserRaftDeadLetters(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	dir := artifactDir(t)
	ctx := newTab(t, 4*time.Minute)
	kctx, kcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer kcancel()
	ui := b.ui()
	if _, err := kadm.NewClient(b.client(t, "", "")).CreateTopic(kctx, 1, 1, nil, "orders"); err != nil {
		t.Fatalf("create orders: %v", err)
	}

	run(t, ctx, "add partitions",
		chromedp.Navigate(ui+"/topics/orders"),
		chromedp.SetValue(chromedp.CSS("#part-count"), "3"),
		chromedp.Click(chromedp.CSS("#add-partitions")),
		chromedp.WaitVisible(chromedp.CSS("#notice")))
	if got := text(t, ctx, "#notice"); !strings.Contains(got, "Partitions added.") {
		t.Fatalf("after adding partitions: notice %q", got)
	}
	if rows := text(t, ctx, "#partitions-table tbody"); strings.Count(rows, "\n") != 2 {
		t.Fatalf("partitions of orders after adding: %q", rows)
	}

	run(t, ctx, "raft health", chromedp.Navigate(ui+"/raft"), chromedp.WaitVisible(chromedp.CSS("#raft-table")))
	// A new partition's replica elects itself: reload until all are led.
	waitText(t, ctx, "#raft-problems", true, func(s string) bool { return s == "0" })
	table := text(t, ctx, "#raft-table tbody")
	if strings.Count(table, "orders") != 3 || !strings.Contains(table, "StateLeader") || !strings.Contains(table, "broker 1 (leader): match") {
		t.Fatalf("raft table %q", table)
	}
	if got := text(t, ctx, "#raft-scope"); !strings.Contains(got, "local to broker 1") {
		t.Fatalf("raft page scope note %q", got)
	}
	screenshot(t, ctx, dir, "ui-raft")

	deadLetter(t, b, "billing", "jobs", "dlq.jobs", "order-1", "bad", "order-3")
	run(t, ctx, "dead-letter topics", chromedp.Navigate(ui+"/dead-letters"), chromedp.WaitVisible(chromedp.CSS("#dlq-topics")))
	if got := text(t, ctx, "#dlq-groups"); !strings.Contains(got, "billing") || !strings.Contains(got, "dlq.jobs") {
		t.Fatalf("dead-letter groups %q", got)
	}
	run(t, ctx, "open dlq.jobs by keyboard",
		chromedp.Focus(chromedp.CSS(`#dlq-topics a[href="/dead-letters/dlq.jobs"]`)),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS("#dlq-records")))
	rows := text(t, ctx, "#dlq-records tbody")
	for _, want := range []string{"jobs partition 0 offset 1", "rejected", "billing", "t-bad"} {
		if !strings.Contains(rows, want) {
			t.Fatalf("dead letters: no %q in %q", want, rows)
		}
	}
	screenshot(t, ctx, dir, "ui-dead-letters")
	run(t, ctx, "follow to the original record",
		chromedp.Click(chromedp.CSS(`#dlq-records a[href^="/topics/jobs/messages"]`)),
		chromedp.WaitVisible(chromedp.CSS("#records")))
	if got := text(t, ctx, "#records tbody"); !strings.Contains(got, "bad") || strings.Contains(got, "order-3") {
		t.Fatalf("the original record: %q", got)
	}
}

// TestBrowserAudit: with SASL, ACLs and the audit log on, an admin finds
// alice's refusal in the audit viewer, filtering from the keyboard.
func TestBrowserAudit(t *testing.T) {
	b := aclBroker(t, brokerOpts{audit: true})
	alice := login(t, b, "alice", "alice-secret")
	if code, _ := alice.get("/topics/secret"); code != http.StatusForbidden {
		t.Fatalf("alice opens secret: %d", code)
	}
	dir := artifactDir(t)
	ctx := newTab(t, 3*time.Minute)
	ui := b.ui()
	adminLogsIn(t, ctx, ui+"/audit", "#audit-form")
	// Principal, Tab to the operation, type, Enter: the form submits.
	run(t, ctx, "filter by keyboard",
		chromedp.SetValue(chromedp.CSS("#result"), "failure"),
		chromedp.Focus(chromedp.CSS("#principal")),
		chromedp.KeyEvent("alice"),
		chromedp.KeyEvent(kb.Tab),
		chromedp.KeyEvent("describe"+kb.Enter))
	// The unfiltered page shows #audit-summary too, so wait for the
	// submitted search's address: a reload before the form's navigation
	// commits would reload the unfiltered page (and cancel the search).
	loc := waitLocation(t, ctx, func(loc string) bool { return strings.Contains(loc, "principal=") })
	if !strings.Contains(loc, "principal=alice") || !strings.Contains(loc, "result=failure") || !strings.Contains(loc, "operation=describe") {
		t.Fatalf("audit search went to %s", loc)
	}
	// The records reach __audit_log asynchronously: reload until there.
	waitText(t, ctx, "#audit-summary", true, func(s string) bool { return !strings.HasSuffix(s, "0 matched.") })
	rows := text(t, ctx, "#audit-table tbody")
	if !strings.Contains(rows, "User:alice") || !strings.Contains(rows, "topic secret") || strings.Contains(rows, "success") {
		t.Fatalf("audit rows %q", rows)
	}
	screenshot(t, ctx, dir, "ui-audit")
}

// TestBrowserEditACL: an admin adds an ACL from the Users and ACLs page
// and sees it listed, then deletes it from its row.
func TestBrowserEditACL(t *testing.T) {
	b := aclBroker(t, brokerOpts{})
	dir := artifactDir(t)
	ctx := newTab(t, 3*time.Minute)
	ui := b.ui()
	adminLogsIn(t, ctx, ui+"/acls", "#acl-form")
	if got := text(t, ctx, "#acls tbody"); strings.Contains(got, "User:bob") {
		t.Fatalf("bob has an ACL already: %q", got)
	}
	run(t, ctx, "add an ACL",
		chromedp.SendKeys(chromedp.CSS("#acl-principal"), "User:bob"),
		chromedp.SetValue(chromedp.CSS("#acl-operation"), "WRITE"),
		chromedp.SetValue(chromedp.CSS("#acl-resource"), "TOPIC"),
		chromedp.SendKeys(chromedp.CSS("#acl-name"), "orders."),
		chromedp.SetValue(chromedp.CSS("#acl-pattern"), "PREFIXED"),
		chromedp.Click(chromedp.CSS("#acl-add")),
		chromedp.WaitVisible(chromedp.CSS("#notice")))
	if got := text(t, ctx, "#notice"); got != "ACL created." {
		t.Fatalf("after adding: notice %q", got)
	}
	var row string
	for _, r := range strings.Split(text(t, ctx, "#acls tbody"), "\n") {
		if strings.Contains(r, "User:bob") {
			row = r
		}
	}
	for _, want := range []string{"TOPIC", "orders.", "PREFIXED", "WRITE", "ALLOW"} {
		if !strings.Contains(row, want) {
			t.Fatalf("bob's ACL row %q lacks %s", row, want)
		}
	}
	screenshot(t, ctx, dir, "ui-acls")
	run(t, ctx, "delete it",
		chromedp.Click(chromedp.CSS(`#acls button[aria-label^="Delete ALLOW WRITE on TOPIC orders. for User:bob"]`)))
	// The page before the click has a notice too: wait for the new one.
	waitText(t, ctx, "#notice", false, func(s string) bool { return s == "ACL deleted." })
	if rows := text(t, ctx, "#acls tbody"); strings.Contains(rows, "User:bob") {
		t.Fatalf("after deleting: rows %q", rows)
	}
}
