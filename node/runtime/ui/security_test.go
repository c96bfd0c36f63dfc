package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// aclSet reads every ACL as "PRINCIPAL HOST RESOURCE NAME PATTERN OP PERM".
func aclSet(t *testing.T, adm *kadm.Client) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	every := kadm.NewACLs().AnyResource().Allow().Deny().AllowHosts().DenyHosts().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny)
	res, err := adm.DescribeACLs(ctx, every)
	if err != nil {
		t.Fatalf("describe ACLs: %v", err)
	}
	out := map[string]bool{}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("describe ACLs: %v", r.Err)
		}
		for _, a := range r.Described {
			out[strings.Join([]string{a.Principal, a.Host, a.Type.String(), a.Name, a.Pattern.String(), a.Operation.String(), a.Permission.String()}, " ")] = true
		}
	}
	return out
}

// scramCreds reads every SCRAM credential as "user MECHANISM=iterations=N".
func scramCreds(t *testing.T, adm *kadm.Client) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	users, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatalf("describe users: %v", err)
	}
	out := map[string]bool{}
	for _, u := range users.Sorted() {
		for _, c := range u.CredInfos {
			out[u.User+" "+c.String()] = true
		}
	}
	return out
}

// roleMembers reads every role's members (DescribeConfigs of Floe's role
// resource, type 100, with an empty name).
func roleMembers(t *testing.T, cl *kgo.Client) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType = 100
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe roles: %v %+v", err, resp)
	}
	out := map[string]string{}
	for _, c := range resp.Resources[0].Configs {
		if c.Value != nil {
			out[c.Name] = *c.Value
		}
	}
	return out
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// TestHTTPEditACLs: an admin adds and deletes an ACL from the UI; bad
// input, a missing CSRF token and a user without ALTER on the cluster are
// refused and change nothing; both changes are in the audit log as the
// admin's CreateAcls and DeleteAcls.
func TestHTTPEditACLs(t *testing.T) {
	b := aclBroker(t, brokerOpts{audit: true})
	adm := kadm.NewClient(b.client(t, "admin", "admin-secret"))
	admin := login(t, b, "admin", "admin-secret")
	_, page := admin.get("/acls")
	if !strings.Contains(page, `id="acl-form"`) {
		t.Fatalf("ACL page has no ACL form:\n%.2000s", page)
	}
	token := csrf(t, page)
	good := url.Values{"csrf": {token}, "principal": {"User:bob"}, "host": {"*"}, "resource": {"TOPIC"}, "name": {"public"},
		"pattern": {"PREFIXED"}, "operation": {"WRITE"}, "permission": {"DENY"}}
	const want = "User:bob * TOPIC public PREFIXED WRITE DENY"
	before := aclSet(t, adm)

	noToken := without(good, "csrf")
	if code, _, body := admin.post("/acls", noToken); code != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Fatalf("add ACL without CSRF: %d %.300s", code, body)
	}
	postChanged(t, admin, "/acls", good, map[string][2]string{
		"resource":          {"resource", "USER"},
		"operation":         {"operation", "ANY"},
		"permission":        {"permission", "MAYBE"},
		"pattern":           {"pattern", "MATCH"},
		"principal":         {"principal", "bob"},
		"principal sep":     {"principal", "User:a,b"},
		"empty name":        {"name", ""},
		"control character": {"name", "pub\x01lic"},
	}, "400 with the error on the page", func(code int, body string) bool {
		return code == http.StatusBadRequest && strings.Contains(body, `role="alert"`) && strings.Contains(body, `id="acl-form"`)
	})
	cluster := url.Values{"csrf": {token}, "principal": {"User:bob"}, "resource": {"CLUSTER"}, "name": {"other"}, "pattern": {"LITERAL"},
		"operation": {"ALTER"}, "permission": {"ALLOW"}}
	if code, _, body := admin.post("/acls", cluster); code != http.StatusBadRequest || !strings.Contains(body, "a CLUSTER ACL names the resource kafka-cluster") {
		t.Errorf("a CLUSTER ACL not named kafka-cluster: %d, want 400 saying so\n%.400s", code, between(body, `role="alert"`, "</div>"))
	}

	alice := login(t, b, "alice", "alice-secret")
	_, apage := alice.get("/topics")
	aliceGood := withValue(good, "csrf", csrf(t, apage))
	if code, _, body := alice.post("/acls", aliceGood); code != http.StatusForbidden || !strings.Contains(body, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("alice adds an ACL: %d %.500s", code, body)
	}
	if after := aclSet(t, adm); !sameSet(before, after) {
		t.Fatalf("refused requests changed the ACLs: %v -> %v", before, after)
	}
	// Share-group offsets need READ (reset) or DELETE (delete) on the
	// group: alice has neither.
	for _, path := range []string{"/share-groups/sg/reset", "/share-groups/sg/delete-offsets"} {
		f := url.Values{"csrf": {aliceGood.Get("csrf")}, "topic": {"public"}, "to": {"earliest"}}
		if code, _, body := alice.post(path, f); code != http.StatusForbidden || !strings.Contains(body, "GROUP_AUTHORIZATION_FAILED") {
			t.Fatalf("alice posts %s: %d %.500s", path, code, body)
		}
	}

	code, hdr, body := admin.post("/acls", good)
	if code != http.StatusSeeOther || hdr.Get("Location") != "/acls?done=acl-created" {
		t.Fatalf("add ACL: %d %v %.500s", code, hdr.Get("Location"), body)
	}
	if !aclSet(t, adm)[want] {
		t.Fatalf("the broker has no %q: %v", want, aclSet(t, adm))
	}
	_, page = admin.get("/acls?done=acl-created")
	if !strings.Contains(page, "ACL created.") || !strings.Contains(between(page, `id="acls"`, "</table>"), "PREFIXED") {
		t.Fatalf("ACL page after adding:\n%.3000s", page)
	}

	if code, _, body := alice.post("/acls/delete", aliceGood); code != http.StatusForbidden || !strings.Contains(body, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("alice deletes an ACL: %d %.500s", code, body)
	}
	if code, _, _ := admin.post("/acls/delete", noToken); code != http.StatusForbidden {
		t.Fatalf("delete ACL without CSRF: %d", code)
	}
	bad := withValue(good, "operation", "ANY") // a filter, not a binding: would delete more than one
	if code, _, _ := admin.post("/acls/delete", bad); code != http.StatusBadRequest {
		t.Fatalf("delete ACL with operation ANY: %d, want 400", code)
	}
	if !aclSet(t, adm)[want] {
		t.Fatalf("refused deletions removed %q", want)
	}
	if code, hdr, _ := admin.post("/acls/delete", good); code != http.StatusSeeOther || hdr.Get("Location") != "/acls?done=acl-deleted" {
		t.Fatalf("delete ACL: %d %v", code, hdr.Get("Location"))
	}
	if after := aclSet(t, adm); !sameSet(before, after) {
		t.Fatalf("after deleting: %v, want %v", after, before)
	}
	if code, _, body := admin.post("/acls/delete", good); code != http.StatusNotFound || !strings.Contains(body, "no such ACL") {
		t.Fatalf("delete a deleted ACL: %d %.400s", code, between(body, `role="alert"`, "</div>"))
	}

	// The broker audited the UI's requests as the admin's.
	deadline := time.Now().Add(waitTimeout)
	for {
		_, body := admin.get("/audit?principal=admin&operation=ACLs&result=success")
		table := between(body, `id="audit-table"`, "</table>")
		bob := "<td>acl User:bob DENY from * WRITE on TOPIC:PREFIXED:public</td>"
		if strings.Contains(table, "<td>User:admin</td><td>CreateACLs</td><td>create</td>"+bob) &&
			strings.Contains(table, "<td>User:admin</td><td>DeleteACLs</td><td>delete</td>"+bob) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the UI's CreateAcls and DeleteAcls are not in the audit log:\n%s", table)
		}
		time.Sleep(200 * time.Millisecond) // audit records reach __audit_log asynchronously
	}
}

// TestHTTPEditUsers: an admin creates a SCRAM user (mechanism and
// iterations as given), the user logs in with it, and the admin deletes
// it; bad input, a missing CSRF token and a user without ALTER on the
// cluster change nothing.
func TestHTTPEditUsers(t *testing.T) {
	b := startBroker(t, adminAndAlice(brokerOpts{}))
	adm := kadm.NewClient(b.client(t, "admin", "admin-secret"))
	admin := login(t, b, "admin", "admin-secret")
	_, page := admin.get("/acls")
	token := csrf(t, page)
	good := url.Values{"csrf": {token}, "user": {"bob"}, "password": {"bob-secret"}, "mechanism": {"SCRAM-SHA-256"}, "iterations": {"8192"}}
	before := scramCreds(t, adm)

	if code, _, _ := admin.post("/users", url.Values{"user": {"bob"}, "password": {"x"}, "mechanism": {"SCRAM-SHA-256"}, "iterations": {"4096"}}); code != http.StatusForbidden {
		t.Fatalf("add user without CSRF: %d", code)
	}
	postChanged(t, admin, "/users", good, map[string][2]string{
		"few iterations":  {"iterations", "100"},
		"many iterations": {"iterations", "20000"},
		"mechanism":       {"mechanism", "PLAIN"},
		"no password":     {"password", ""},
		"comma":           {"user", "bob,x"},
		"no user":         {"user", ""},
	}, "400 with the error and without the password", func(code int, body string) bool {
		return code == http.StatusBadRequest && strings.Contains(body, `role="alert"`) && !strings.Contains(body, "bob-secret")
	})
	alice := login(t, b, "alice", "alice-secret")
	_, apage := alice.get("/topics")
	aliceForm := withValue(good, "csrf", csrf(t, apage))
	if code, _, body := alice.post("/users", aliceForm); code != http.StatusForbidden || !strings.Contains(body, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("alice adds a user: %d %.500s", code, body)
	}
	if after := scramCreds(t, adm); !sameSet(before, after) {
		t.Fatalf("refused requests changed the users: %v -> %v", before, after)
	}

	if code, hdr, body := admin.post("/users", good); code != http.StatusSeeOther || hdr.Get("Location") != "/acls?done=user-saved" {
		t.Fatalf("add bob: %d %v %.500s", code, hdr.Get("Location"), body)
	}
	if !scramCreds(t, adm)["bob SCRAM-SHA-256=iterations=8192"] {
		t.Fatalf("bob's credential: %v", scramCreds(t, adm))
	}
	if _, body := admin.get("/acls?done=user-saved"); !strings.Contains(body, "User saved.") || !strings.Contains(between(body, `id="users"`, "</table>"), "bob") {
		t.Fatalf("users after adding bob:\n%.2000s", between(body, `id="users"`, "</table>"))
	}
	login(t, b, "bob", "bob-secret") // the new credential works

	del := url.Values{"csrf": {token}, "user": {"bob"}, "mechanism": {"SCRAM-SHA-256"}}
	aliceDel := url.Values{"csrf": {aliceForm.Get("csrf")}, "user": {"bob"}, "mechanism": {"SCRAM-SHA-256"}}
	if code, _, _ := alice.post("/users/delete", aliceDel); code != http.StatusForbidden {
		t.Fatalf("alice deletes bob: %d", code)
	}
	if code, _, _ := admin.post("/users/delete", url.Values{"csrf": {token}, "user": {"bob"}, "mechanism": {"MD5"}}); code != http.StatusBadRequest {
		t.Fatalf("delete with a bad mechanism: %d", code)
	}
	if !scramCreds(t, adm)["bob SCRAM-SHA-256=iterations=8192"] {
		t.Fatalf("refused deletions removed bob")
	}
	if code, hdr, _ := admin.post("/users/delete", del); code != http.StatusSeeOther || hdr.Get("Location") != "/acls?done=user-deleted" {
		t.Fatalf("delete bob: %d %v", code, hdr.Get("Location"))
	}
	if after := scramCreds(t, adm); !sameSet(before, after) {
		t.Fatalf("after deleting bob: %v, want %v", after, before)
	}
	if code, _, _ := admin.post("/users/delete", del); code < 400 || code >= 500 {
		t.Fatalf("delete bob twice: %d, want a 4xx", code)
	}
}

// TestHTTPEditRoles: an admin creates a role, binds and unbinds members
// and deletes it; bad input, a missing CSRF token and a user without
// ALTER on the cluster change nothing.
func TestHTTPEditRoles(t *testing.T) {
	b := startBroker(t, adminAndAlice(brokerOpts{}))
	cl := b.client(t, "admin", "admin-secret")
	admin := login(t, b, "admin", "admin-secret")
	_, page := admin.get("/acls")
	if !strings.Contains(page, `id="roles"`) || !strings.Contains(page, "viewer") {
		t.Fatalf("ACL page lists no roles:\n%.3000s", between(page, `id="roles-h"`, "</section>"))
	}
	token := csrf(t, page)
	post := func(br *browser, f url.Values) (int, string) {
		code, hdr, body := br.post("/roles", f)
		return code, hdr.Get("Location") + body
	}
	if code, _ := post(admin, url.Values{"role": {"etl"}, "members": {"User:bob"}, "action": {"create"}}); code != http.StatusForbidden {
		t.Fatalf("create a role without CSRF: %d", code)
	}
	for name, f := range map[string]url.Values{
		"bad name":        {"role": {"no spaces"}, "action": {"create"}},
		"bad action":      {"role": {"etl"}, "action": {"rename"}},
		"bad member":      {"role": {"etl"}, "members": {"bob"}, "action": {"create"}},
		"bind nobody":     {"role": {"viewer"}, "action": {"bind"}},
		"bind a new role": {"role": {"nosuch"}, "members": {"User:bob"}, "action": {"bind"}}, // the broker: create it first
	} {
		f.Set("csrf", token)
		if code, body := post(admin, f); code != http.StatusBadRequest || !strings.Contains(body, `role="alert"`) {
			t.Errorf("%s: %d, want 400\n%.500s", name, code, between(body, `role="alert"`, "</div>"))
		}
	}
	alice := login(t, b, "alice", "alice-secret")
	_, apage := alice.get("/topics")
	if code, body := post(alice, url.Values{"csrf": {csrf(t, apage)}, "role": {"etl"}, "members": {"User:bob"}, "action": {"create"}}); code != http.StatusForbidden || !strings.Contains(body, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("alice creates a role: %d %.400s", code, body)
	}
	if _, ok := roleMembers(t, cl)["etl"]; ok {
		t.Fatalf("refused requests created role etl")
	}

	for _, step := range []struct {
		action, members, want string
	}{
		{"create", "User:bob, User:carol", "User:bob,User:carol"},
		{"bind", "User:dave", "User:bob,User:carol,User:dave"},
		{"unbind", "User:carol", "User:bob,User:dave"},
	} {
		code, loc := post(admin, url.Values{"csrf": {token}, "role": {"etl"}, "members": {step.members}, "action": {step.action}})
		if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/acls?done=role-"+step.action) {
			t.Fatalf("%s etl: %d %.400s", step.action, code, loc)
		}
		if got := roleMembers(t, cl)["etl"]; got != step.want {
			t.Fatalf("after %s: members %q, want %q", step.action, got, step.want)
		}
	}
	// Delete with principals is ambiguous (unbind was meant?): refused.
	if code, body := post(admin, url.Values{"csrf": {token}, "role": {"etl"}, "members": {"User:bob"}, "action": {"delete"}}); code != http.StatusBadRequest || !strings.Contains(body, "delete takes no members") {
		t.Fatalf("delete etl naming members: %d %.400s", code, between(body, `role="alert"`, "</div>"))
	}
	if _, body := admin.get("/acls"); !strings.Contains(between(body, `id="roles"`, "</table>"), "User:bob, User:dave") {
		t.Fatalf("role table:\n%s", between(body, `id="roles"`, "</table>"))
	}
	if code, loc := post(admin, url.Values{"csrf": {token}, "role": {"etl"}, "action": {"delete"}}); code != http.StatusSeeOther {
		t.Fatalf("delete etl: %d %.400s", code, loc)
	}
	if _, ok := roleMembers(t, cl)["etl"]; ok {
		t.Fatalf("role etl still there after delete")
	}
}

// shareStarts reads a share group's start offset per partition of topic.
func shareStarts(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	res, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil || res[group].Err != nil {
		t.Fatalf("describe share offsets of %s: %v %v", group, err, res[group].Err)
	}
	out := map[int32]int64{}
	res[group].Offsets.Each(func(o kadm.ShareOffset) {
		if o.Topic == topic && o.Err == nil {
			out[o.Partition] = o.StartOffset
		}
	})
	return out
}

// TestHTTPShareOffsets: the share group page resets a share group's start
// offsets (earliest, latest, a given offset; one partition or all) and
// deletes them, only while the group is empty; bad input and a missing
// CSRF token change nothing.
func TestHTTPShareOffsets(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	admCl := b.client(t, "", "")
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "jobs"); err != nil {
		t.Fatalf("create jobs: %v", err)
	}
	setGroupConfigs(t, ctx, admCl, "sg", "share.auto.offset.reset", "earliest")
	producer := b.client(t, "", "", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 6; i++ {
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "jobs", Partition: int32(i % 2), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	// A member consumes (and accepts) everything: both start offsets reach 3.
	share := b.client(t, "", "", kgo.ShareGroup("sg"), kgo.ConsumeTopics("jobs"), kgo.FetchMaxWait(200*time.Millisecond))
	for {
		if ctx.Err() != nil {
			t.Fatalf("share group sg never consumed jobs: %v", shareStarts(t, adm, "sg", "jobs"))
		}
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		share.PollFetches(pctx).EachRecord(func(r *kgo.Record) { r.Ack(kgo.AckAccept) })
		share.FlushAcks(pctx)
		pcancel()
		if s := shareStarts(t, adm, "sg", "jobs"); s[0] == 3 && s[1] == 3 {
			break
		}
	}
	br := newBrowser(t, b.ui())
	code, page := br.get("/share-groups/sg")
	if code != http.StatusOK || !strings.Contains(page, `id="share-reset-form"`) || !strings.Contains(page, `id="share-delete-form"`) {
		t.Fatalf("share group page: %d\n%.2000s", code, page)
	}
	token := csrf(t, page)
	unchanged := func(what string) {
		t.Helper()
		if s := shareStarts(t, adm, "sg", "jobs"); s[0] != 3 || s[1] != 3 {
			t.Fatalf("%s changed the start offsets: %v", what, s)
		}
	}

	// A group with a member: refused by the broker (NON_EMPTY_GROUP).
	code, _, body := br.post("/share-groups/sg/reset", url.Values{"csrf": {token}, "topic": {"jobs"}, "to": {"earliest"}})
	if code != http.StatusConflict || !strings.Contains(body, "NON_EMPTY_GROUP") {
		t.Fatalf("reset a share group with a member: %d %.500s", code, between(body, `role="alert"`, "</div>"))
	}
	if code, _, _ := br.post("/share-groups/sg/delete-offsets", url.Values{"csrf": {token}, "topic": {"jobs"}}); code != http.StatusConflict {
		t.Fatalf("delete offsets of a share group with a member: %d", code)
	}
	unchanged("a refused reset of a live group")
	share.Close()
	deadline := time.Now().Add(waitTimeout)
	for {
		if _, body := br.get("/share-groups/sg"); strings.Contains(body, `id="share-members">0<`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("share group sg still has members after its consumer closed")
		}
		time.Sleep(100 * time.Millisecond)
	}

	if code, _, _ := br.post("/share-groups/sg/reset", url.Values{"topic": {"jobs"}, "to": {"earliest"}}); code != http.StatusForbidden {
		t.Fatalf("reset without CSRF: %d", code)
	}
	if code, _, _ := br.post("/share-groups/sg/delete-offsets", url.Values{"topic": {"jobs"}}); code != http.StatusForbidden {
		t.Fatalf("delete offsets without CSRF: %d", code)
	}
	for name, tc := range map[string]struct {
		f    url.Values
		want int
	}{
		"beyond the end":  {url.Values{"topic": {"jobs"}, "to": {"offset"}, "offset": {"4"}}, http.StatusBadRequest},
		"negative offset": {url.Values{"topic": {"jobs"}, "to": {"offset"}, "offset": {"-1"}}, http.StatusBadRequest},
		"bad target":      {url.Values{"topic": {"jobs"}, "to": {"tomorrow"}}, http.StatusBadRequest},
		"no partition 9":  {url.Values{"topic": {"jobs"}, "partition": {"9"}, "to": {"earliest"}}, http.StatusBadRequest},
		"bad topic":       {url.Values{"topic": {"no spaces"}, "to": {"earliest"}}, http.StatusBadRequest},
		"missing topic":   {url.Values{"topic": {"nosuch"}, "to": {"earliest"}}, http.StatusNotFound},
	} {
		tc.f.Set("csrf", token)
		code, _, body := br.post("/share-groups/sg/reset", tc.f)
		if code != tc.want || !strings.Contains(body, `role="alert"`) {
			t.Errorf("%s: %d, want %d with the error\n%.500s", name, code, tc.want, between(body, `role="alert"`, "</div>"))
		}
	}
	if code, _, _ := br.post("/share-groups/sg/delete-offsets", url.Values{"csrf": {token}, "topic": {"no spaces"}}); code != http.StatusBadRequest {
		t.Fatalf("delete offsets of a bad topic name: %d", code)
	}
	unchanged("refused resets")

	for _, step := range []struct {
		f    url.Values
		want map[int32]int64
	}{
		{url.Values{"topic": {"jobs"}, "partition": {"1"}, "to": {"earliest"}}, map[int32]int64{0: 3, 1: 0}},
		{url.Values{"topic": {"jobs"}, "to": {"offset"}, "offset": {"2"}}, map[int32]int64{0: 2, 1: 2}},
		{url.Values{"topic": {"jobs"}, "partition": {"0"}, "to": {"latest"}}, map[int32]int64{0: 3, 1: 2}},
	} {
		step.f.Set("csrf", token)
		code, hdr, body := br.post("/share-groups/sg/reset", step.f)
		if code != http.StatusSeeOther || hdr.Get("Location") != "/share-groups/sg?done=reset" {
			t.Fatalf("reset %v: %d %v %.500s", step.f, code, hdr.Get("Location"), between(body, `role="alert"`, "</div>"))
		}
		if got := shareStarts(t, adm, "sg", "jobs"); got[0] != step.want[0] || got[1] != step.want[1] {
			t.Fatalf("after reset %v: start offsets %v, want %v", step.f, got, step.want)
		}
	}
	if _, body := br.get("/share-groups/sg?done=reset"); !strings.Contains(body, "Start offsets reset.") {
		t.Fatalf("no notice after a reset")
	}
	code, hdr, _ := br.post("/share-groups/sg/delete-offsets", url.Values{"csrf": {token}, "topic": {"jobs"}})
	if code != http.StatusSeeOther || hdr.Get("Location") != "/share-groups/sg?done=deleted" {
		t.Fatalf("delete offsets: %d %v", code, hdr.Get("Location"))
	}
	if got := shareStarts(t, adm, "sg", "jobs"); len(got) != 0 {
		t.Fatalf("after deleting: start offsets %v, want none", got)
	}
}
