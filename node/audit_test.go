package node

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/audit"
	"github.com/floe-broker/floe/node/controller"
)

func audited(cfg *Config) {
	secured(cfg)
	cfg.Security.Audit = AuditConfig{Enabled: true}
}

// drainAudit runs until no broker has an audit record waiting.
func drainAudit(t *testing.T, c *cluster) {
	t.Helper()
	if !c.runUntil(60*time.Second, func() bool {
		for _, n := range c.nodes {
			if n.r != nil && (len(n.r.sec.audit.queue) > 0 || n.r.sec.audit.inflight > 0) {
				return false
			}
		}
		return true
	}) {
		for id, n := range c.nodes {
			if n.r != nil {
				t.Logf("node %d: %d queued, %d in flight", id, len(n.r.sec.audit.queue), n.r.sec.audit.inflight)
			}
		}
		t.Fatalf("audit records still waiting after 60s simulated")
	}
}

// auditLog reads __audit_log partition 0 from its leader, as the super
// user, and checks its chain; it returns the decoded records.
func auditLog(t *testing.T, c *cluster) ([]audit.Record, *audit.Break) {
	t.Helper()
	var lead int32
	if !c.runUntil(10*time.Second, func() bool { lead = leaderOf(c, AuditTopic, 0); return lead != 0 }) {
		t.Fatalf("no leader for %s", AuditTopic)
	}
	vals, offsets := fetchAllAs(t, c, asAdmin, lead, AuditTopic, 0)
	v := audit.NewVerifier()
	var recs []audit.Record
	var brk *audit.Break
	for i, val := range vals {
		if b := v.Next(0, offsets[i], []byte(val)); b != nil && brk == nil {
			brk = b
		}
		rec, err := audit.Unmarshal([]byte(val))
		if err != nil {
			t.Fatalf("offset %d: %v", offsets[i], err)
		}
		recs = append(recs, rec)
	}
	return recs, brk
}

func findRecord(recs []audit.Record, match func(audit.Record) bool) *audit.Record {
	for i := range recs {
		if match(recs[i]) {
			return &recs[i]
		}
	}
	return nil
}

// Every kind of event leaves one record with who, from where, what, on
// what, the outcome and why; the chain holds from offset 0.
func TestAuditRecordsEveryKind(t *testing.T) {
	c := newClusterWith(t, 1, 41, audited)
	var sunk []string
	c.nodes[1].r.env.AuditSink = func(rec []byte) { sunk = append(sunk, string(rec)) }
	c.waitReady()
	createTopicAs(t, c, asAdmin, "orders", 1)
	if code := metadataAs(t, c, asBob, "orders").Topics[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob: %v", kerr.ErrorForCode(code))
	}
	incremental := incrementalReq(kmsg.ConfigResourceTypeTopic, "orders", setOp("retention.ms", "60000"))
	if resp := c.requestAs(1, asAdmin, incremental).(*kmsg.IncrementalAlterConfigsResponse); resp.Resources[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.Resources[0].ErrorCode))
	}
	grant(t, c, "User:alice ALLOW * READ TOPIC LITERAL orders")
	if code, _ := alterRole(t, c, asAdmin, "viewer", kmsg.IncrementalAlterConfigOpAppend, "User:carol"); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	quota := alterQuotaReq("alice", nil, controller.QuotaProducerByteRate, 1024, false)
	if resp := c.requestAs(1, asAdmin, quota).(*kmsg.AlterClientQuotasResponse); resp.Entries[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.Entries[0].ErrorCode))
	}
	c.nodes[1].r.AuditAuthentication(asAlice, "User:alice", "SCRAM-SHA-256", false, "wrong password")
	drainAudit(t, c)

	recs, brk := auditLog(t, c)
	if brk != nil {
		t.Fatalf("chain: %v", brk)
	}
	for _, want := range []struct {
		what  string
		match func(audit.Record) bool
	}{
		{"bob's denied DESCRIBE", func(r audit.Record) bool {
			return r.ClassUID == 6003 && r.Actor.User.Name == "User:bob" && r.Status == "Failure" && r.Unmapped.Floe.Action == "DESCRIBE" &&
				r.Resources[0] == audit.Resource{Type: "topic", Name: "orders"} && r.API.Operation == "Metadata" &&
				r.SrcEndpoint.IP == "10.0.0.3" && r.SrcEndpoint.Port == 3000 && r.DstEndpoint.SvcName == "SASL_SSL" &&
				r.Actor.Authorizations[0].Decision == "deny" && strings.Contains(r.StatusDetail, "allow.everyone.if.no.acl.found")
		}},
		{"the topic creation", func(r audit.Record) bool {
			return r.Actor.User.Name == "User:admin" && r.API.Operation == "CreateTopics" && r.Status == "Success" && r.Resources[0].Name == "orders"
		}},
		{"the config change", func(r audit.Record) bool {
			return r.API.Operation == "IncrementalAlterConfigs" && strings.Contains(r.StatusDetail, "retention.ms")
		}},
		{"the ACL creation", func(r audit.Record) bool {
			return r.API.Operation == "CreateACLs" && r.Resources[0].Type == "acl" && strings.Contains(r.Resources[0].Name, "User:alice ALLOW")
		}},
		{"the role binding", func(r audit.Record) bool {
			return r.Resources[0] == audit.Resource{Type: "role", Name: "viewer"} && strings.Contains(r.StatusDetail, "User:carol")
		}},
		{"the quota change", func(r audit.Record) bool {
			return r.ClassUID == 6003 && r.API.Operation == "AlterClientQuotas" && r.Status == "Success" && len(r.Resources) == 1 &&
				r.Resources[0] == audit.Resource{Type: "client_quota", Name: "user=alice"} && r.StatusDetail == "set producer_byte_rate=1024"
		}},
		{"the failed authentication", func(r audit.Record) bool {
			return r.ClassUID == 3002 && r.AuthProtocol == "SCRAM-SHA-256" && r.Status == "Failure" && r.StatusDetail == "wrong password"
		}},
	} {
		if findRecord(recs, want.match) == nil {
			var all []string
			for _, r := range recs {
				b, _ := json.Marshal(r)
				all = append(all, string(b))
			}
			t.Errorf("no record of %s in:\n%s", want.what, strings.Join(all, "\n"))
		}
	}
	// The file sink saw every record the topic holds (and before the
	// chain linked them).
	if len(sunk) != len(recs) || strings.Contains(sunk[0], `"prev_sha256":"0`) {
		t.Fatalf("sink saw %d records, the topic holds %d", len(sunk), len(recs))
	}
	// Nobody writes the audit log but the brokers, and only those allowed
	// read it.
	p := kmsg.NewPtrProduceRequest()
	p.Version, p.Acks, p.TimeoutMillis = 9, -1, 1000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic, pt.Partitions = AuditTopic, []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batchOf("forged")}}
	p.Topics = append(p.Topics, pt)
	if code := c.requestAs(1, asAdmin, p).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("a super user writes the audit log: %v", kerr.ErrorForCode(code))
	}
	if code := deleteRecordsAs(t, c, asAdmin, AuditTopic); code != kerr.InvalidTopicException.Code {
		t.Fatalf("a super user deletes audit records: %v", kerr.ErrorForCode(code))
	}
}

func deleteRecordsAs(t *testing.T, c *cluster, who Client, topic string) int16 {
	t.Helper()
	resp := c.requestAs(1, who, deleteRecordsReq(topic, map[int32]int64{0: -1})).(*kmsg.DeleteRecordsResponse)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// moveLeader hands the leadership of topic/0 to node to.
func moveLeader(t *testing.T, c *cluster, topic string, to int32) {
	t.Helper()
	if !c.runUntil(20*time.Second, func() bool {
		lead := leaderOf(c, topic, 0)
		if lead == to {
			return true
		}
		if lead != 0 {
			p := c.nodes[lead].r.byName[topicPartition{topic, 0}]
			p.Replica().TransferLeader(uint64(to))
			c.nodes[lead].r.queueProcess()
		}
		c.runFor(50 * time.Millisecond)
		return false
	}) {
		t.Fatalf("leadership of %s-0 did not move to %d", topic, to)
	}
}

// auditAcrossLeaderChanges has every broker record denials while the
// leadership of __audit_log moves around (handed over, and its holder
// crashed), and returns the chain's first break, if any, after checking
// that every record acknowledged by the log is in it.
func auditAcrossLeaderChanges(t *testing.T, seed int64) *audit.Break {
	c := newClusterWith(t, 3, seed, audited)
	c.waitReady()
	deny := func(round int) {
		for _, id := range []int32{1, 2, 3} {
			if c.nodes[id].r == nil {
				continue
			}
			md := kmsg.NewPtrMetadataRequest()
			md.Version, md.Topics = 12, []kmsg.MetadataRequestTopic{topicReq(fmt.Sprintf("secret-%d-%d", round, id))}
			c.requestAs(id, asBob, md)
		}
	}
	deny(0)
	drainAudit(t, c)
	lost := map[string]bool{} // what a crashed broker had not got acknowledged
	order := []int32{2, 3, 1, 2, 1, 3}
	for round, to := range order {
		deny(round + 1)
		c.runFor(2 * time.Millisecond) // some appends in flight
		moveLeader(t, c, AuditTopic, to)
		deny(round + 1)
		if round == 3 {
			// Crash the leader with records in flight, and bring it back.
			lead := leaderOf(c, AuditTopic, 0)
			deny(100)
			c.runFor(time.Millisecond)
			for _, rec := range c.nodes[lead].r.sec.audit.queue {
				r, _ := audit.Unmarshal(rec)
				lost[r.Resources[0].Name] = true
			}
			c.nodes[lead].crash()
			c.runFor(2 * time.Second)
			c.nodes[lead].boot()
		}
	}
	deny(200)
	drainAudit(t, c)
	recs, brk := auditLog(t, c)
	if brk != nil {
		return brk
	}
	seen, uids := map[string]bool{}, map[string]bool{}
	for _, r := range recs {
		seen[r.Resources[0].Name] = true
		if uids[r.Metadata.UID] {
			t.Errorf("record %s written twice", r.Metadata.UID)
		}
		uids[r.Metadata.UID] = true
	}
	// Denials queued on a broker that crashed before they were
	// acknowledged are lost (documented); every other one is there.
	for round := 0; round <= len(order); round++ {
		for _, id := range []int32{1, 2, 3} {
			if name := fmt.Sprintf("secret-%d-%d", round, id); !seen[name] && !lost[name] {
				t.Errorf("no record of the denial of %s", name)
			}
		}
	}
	if len(recs) < 3*(len(order)+1) {
		t.Errorf("only %d records", len(recs))
	}
	return nil
}

func TestAuditChainAcrossLeaderChanges(t *testing.T) {
	for _, seed := range []int64{42, 43} {
		if brk := auditAcrossLeaderChanges(t, seed); brk != nil {
			t.Fatalf("seed %d: %v", seed, brk)
		}
	}
}
