package node

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// regexHeartbeat is a joining KIP-848 member subscribed by regex.
func regexHeartbeat(g, member string, epoch int32, regex string) *kmsg.ConsumerGroupHeartbeatRequest {
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch = 1, g, member, epoch
	hb.RebalanceTimeoutMillis = 30000
	hb.SubscribedTopicRegex = kmsg.StringPtr(regex)
	return hb
}

// describeConsumerGroupAs describes one consumer group as who.
func describeConsumerGroupAs(c *cluster, who Client, g string) kmsg.ConsumerGroupDescribeResponseGroup {
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Groups = []string{g}
	return c.requestAs(1, who, d).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
}

// targetTopics lists the topics of a described member's target, sorted.
func targetTopics(g kmsg.ConsumerGroupDescribeResponseGroup, member string) []string {
	var out []string
	for _, m := range g.Members {
		if m.MemberID == member {
			for _, tp := range m.TargetAssignment.TopicPartitions {
				out = append(out, tp.Topic)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestConsumerRegexFilteredByDescribe: a KIP-848 regex subscription
// matches only the topics the member's principal may DESCRIBE, as in
// Kafka, also when another member's heartbeat (of a principal that may
// describe more) resolves the group's subscriptions: the coordinator keeps
// each member's principal. ConsumerGroupDescribe hides a group whose
// assignments name a topic the client may not DESCRIBE
// (TOPIC_AUTHORIZATION_FAILED, no members).
func TestConsumerRegexFilteredByDescribe(t *testing.T) {
	c := newClusterWith(t, 1, 41, secured)
	c.waitReady()
	for _, name := range []string{"orders-eu", "orders-us", "payments"} {
		createTopicAs(t, c, asAdmin, name, 2)
	}
	grant(t, c,
		"User:alice ALLOW * READ GROUP LITERAL cg",
		"User:alice ALLOW * DESCRIBE GROUP LITERAL cg",
		"User:alice ALLOW * DESCRIBE TOPIC LITERAL orders-eu",
		"User:bob ALLOW * READ GROUP LITERAL cg",
		"User:bob ALLOW * DESCRIBE TOPIC PREFIXED orders-")
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKeys = 4, []string{"cg"}
	heartbeat := func(who Client, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		var resp *kmsg.ConsumerGroupHeartbeatResponse
		ok := c.runUntil(30*time.Second, func() bool {
			c.requestAs(1, asAdmin, fc) // creates __consumer_offsets
			resp = c.requestAs(1, who, req).(*kmsg.ConsumerGroupHeartbeatResponse)
			switch resp.ErrorCode {
			case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
				c.runFor(50 * time.Millisecond)
				return false
			}
			return true
		})
		if !ok || resp.ErrorCode != 0 {
			t.Fatalf("%s heartbeat: %v", who.Principal, kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp
	}
	heartbeat(asAlice, regexHeartbeat("cg", "alice-m", 0, "orders-.*"))
	g := describeConsumerGroupAs(c, asAdmin, "cg")
	if got := targetTopics(g, "alice-m"); !slices.Equal(got, []string{"orders-eu"}) {
		t.Fatalf("alice's target topics %v, want [orders-eu] (orders-us matches but alice may not describe it)", got)
	}
	// bob's join resolves every member's regex again: alice's still with
	// alice's principal, bob's with bob's.
	heartbeat(asBob, regexHeartbeat("cg", "bob-m", 0, "orders-.*"))
	g = describeConsumerGroupAs(c, asAdmin, "cg")
	if got := targetTopics(g, "alice-m"); len(got) == 0 || slices.Contains(got, "orders-us") || slices.Contains(got, "payments") {
		t.Fatalf("after bob joined, alice's target topics %v: want orders-eu only", got)
	}
	if got := targetTopics(g, "bob-m"); !slices.Contains(got, "orders-us") || slices.Contains(got, "payments") {
		t.Fatalf("bob's target topics %v: want orders-us among them, not payments", got)
	}
	// alice may describe the group but not orders-us, which bob is
	// assigned: the group is hidden from her.
	if ga := describeConsumerGroupAs(c, asAlice, "cg"); ga.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(ga.Members) != 0 {
		t.Fatalf("alice describes cg: %v with %d members, want TOPIC_AUTHORIZATION_FAILED and none", kerr.ErrorForCode(ga.ErrorCode), len(ga.Members))
	}
	// granted orders-us, her next heartbeat resolves it for her too
	grant(t, c, "User:alice ALLOW * DESCRIBE TOPIC LITERAL orders-us")
	heartbeat(asAlice, regexHeartbeat("cg", "alice-m", 0, "orders-.*"))
	g = describeConsumerGroupAs(c, asAdmin, "cg")
	if g.ErrorCode != 0 {
		t.Fatalf("admin describes cg: %v", kerr.ErrorForCode(g.ErrorCode))
	}
	all := append(targetTopics(g, "alice-m"), targetTopics(g, "bob-m")...)
	if !slices.Contains(all, "orders-us") || !slices.Contains(all, "orders-eu") || slices.Contains(all, "payments") {
		t.Fatalf("targets %v after the grant: want orders-eu and orders-us shared, no payments", all)
	}
	if ga := describeConsumerGroupAs(c, asAlice, "cg"); ga.ErrorCode != 0 || len(ga.Members) != 2 {
		t.Fatalf("alice describes cg after the grant: %v with %d members", kerr.ErrorForCode(ga.ErrorCode), len(ga.Members))
	}
}

// namesHeartbeat is a KIP-848 member's heartbeat subscribing by name.
func namesHeartbeat(g, member string, epoch int32, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch = 1, g, member, epoch
	hb.RebalanceTimeoutMillis = 30000
	hb.SubscribedTopicNames = topics
	return hb
}

// TestConsumerHeartbeatTopicNamesAuthorized: as in Kafka 4.0, a
// ConsumerGroupHeartbeat naming a subscribed topic its principal may not
// DESCRIBE fails with TOPIC_AUTHORIZATION_FAILED (the message names the
// topic) and leaves the group as it was: a joining member is not added, a
// member's subscription is not changed. Naming only describable topics
// works.
func TestConsumerHeartbeatTopicNamesAuthorized(t *testing.T) {
	c := newClusterWith(t, 1, 43, secured)
	c.waitReady()
	for _, name := range []string{"a", "b"} {
		createTopicAs(t, c, asAdmin, name, 2)
	}
	grant(t, c,
		"User:alice ALLOW * READ GROUP LITERAL cg",
		"User:alice ALLOW * DESCRIBE TOPIC LITERAL a")
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKeys = 4, []string{"cg"}
	heartbeat := func(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		var resp *kmsg.ConsumerGroupHeartbeatResponse
		ok := c.runUntil(30*time.Second, func() bool {
			c.requestAs(1, asAdmin, fc) // creates __consumer_offsets
			resp = c.requestAs(1, asAlice, req).(*kmsg.ConsumerGroupHeartbeatResponse)
			switch resp.ErrorCode {
			case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
				c.runFor(50 * time.Millisecond)
				return false
			}
			return true
		})
		if !ok {
			t.Fatalf("heartbeat: coordinator never ready: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp
	}
	refused := func(what string, resp *kmsg.ConsumerGroupHeartbeatResponse) {
		t.Helper()
		if resp.ErrorCode != kerr.TopicAuthorizationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "b") {
			t.Fatalf("%s: %v (%v), want TOPIC_AUTHORIZATION_FAILED naming b", what, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
		}
	}
	refused("a new member subscribing [a b]", heartbeat(namesHeartbeat("cg", "m1", 0, "a", "b")))
	if resp := heartbeat(namesHeartbeat("cg", "m1", 0, "a")); resp.ErrorCode != 0 || resp.MemberEpoch < 1 {
		t.Fatalf("m1 subscribing [a]: %v, epoch %d", kerr.ErrorForCode(resp.ErrorCode), resp.MemberEpoch)
	}
	before := describeConsumerGroupAs(c, asAdmin, "cg")
	if before.ErrorCode != 0 || len(before.Members) != 1 {
		t.Fatalf("admin describes cg: %v with %d members, want m1 alone", kerr.ErrorForCode(before.ErrorCode), len(before.Members))
	}
	refused("a second member subscribing [b a]", heartbeat(namesHeartbeat("cg", "m2", 0, "b", "a")))
	refused("m1 resubscribing [a b]", heartbeat(namesHeartbeat("cg", "m1", before.Members[0].MemberEpoch, "a", "b")))
	after := describeConsumerGroupAs(c, asAdmin, "cg")
	if after.ErrorCode != 0 || len(after.Members) != 1 || after.Members[0].MemberID != "m1" ||
		!slices.Equal(after.Members[0].SubscribedTopics, []string{"a"}) || after.Epoch != before.Epoch {
		t.Fatalf("after the refusals cg is %+v, want it as before: m1 alone subscribed to [a], epoch %d", after, before.Epoch)
	}
}
