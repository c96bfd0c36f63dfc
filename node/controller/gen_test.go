package controller

import (
	"fmt"

	"pgregory.net/rapid"

	"github.com/floe-broker/floe/node/acl"
)

// Generators for commands over a small universe of broker ids, topic names
// and group ids, so that a random sequence mixes valid commands with
// invalid ones (unknown broker, duplicate topic, wrong partition index...).

var (
	genBrokerID  = rapid.OneOf(rapid.Int32Range(1, 3), rapid.Int32Range(-1, 5))
	genTopicName = rapid.SampledFrom([]string{"a", "b", "c.d", "", "bad name", "__consumer_offsets"})
	genGroup     = rapid.Uint64Range(FirstPartitionGroup-1, FirstPartitionGroup+8)
	genRack      = rapid.SampledFrom([]string{"", "r1", "r2", "r3"})
	genUserName  = rapid.SampledFrom([]string{"alice", "bob", ""})
)

// genCredential draws a SCRAM credential, mostly valid.
func genCredential(t *rapid.T) ScramCredential {
	mech := rapid.Int8Range(0, 3).Draw(t, "mechanism")
	size := ScramKeyBytes(mech)
	if rapid.IntRange(0, 5).Draw(t, "badKey") == 0 {
		size = 5
	}
	return ScramCredential{Mechanism: mech, Salt: []byte(rapid.SampledFrom([]string{"", "salt"}).Draw(t, "salt")),
		Iterations: rapid.SampledFrom([]int32{4095, 4096, 8192, 16384, 16385}).Draw(t, "iterations"),
		StoredKey:  make([]byte, size), ServerKey: make([]byte, size)}
}

func genReplicas(t *rapid.T, label string) []int32 {
	return rapid.SliceOfN(genBrokerID, 0, 4).Draw(t, label)
}

func genPartitions(t *rapid.T, label string) []Partition {
	n := rapid.IntRange(0, 3).Draw(t, label+"Count")
	first := rapid.Int32Range(0, 4).Draw(t, label+"First")
	ps := make([]Partition, n)
	for i := range ps {
		idx := first + int32(i)
		if rapid.IntRange(0, 9).Draw(t, label+"BadIndex") == 0 {
			idx = rapid.Int32Range(-1, 5).Draw(t, label+"Index")
		}
		ps[i] = Partition{Index: idx, Replicas: genReplicas(t, label+"Replicas"),
			// Proposers leave these for Apply to set; a command may carry
			// anything.
			Group: rapid.Uint64Range(0, 3).Draw(t, label+"Group"), Leader: rapid.Int32Range(-1, 3).Draw(t, label+"Leader")}
	}
	return ps
}

func genConfigMap(t *rapid.T, label string) map[string]string {
	return rapid.MapOfN(rapid.SampledFrom([]string{"retention.ms", "segment.bytes", "cleanup.policy", "x"}),
		rapid.SampledFrom([]string{"1", "2", "compact", ""}), 0, 3).Draw(t, label)
}

func genCommand(t *rapid.T) *Command {
	c := &Command{ReqID: rapid.SampledFrom([]string{"", "r1"}).Draw(t, "reqID")}
	switch rapid.IntRange(0, 17).Draw(t, "command") {
	case 0:
		c.RegisterBroker = &Broker{ID: genBrokerID.Draw(t, "id"), KafkaHost: "h", KafkaPort: rapid.Int32Range(1, 3).Draw(t, "port"),
			RaftAddr: "r", Rack: genRack.Draw(t, "rack"), Decommissioned: rapid.Bool().Draw(t, "decom")}
	case 1:
		id := genBrokerID.Draw(t, "id")
		c.Decommission = &id
	case 2:
		c.CreateTopic = &Topic{Name: genTopicName.Draw(t, "name"), Partitions: genPartitions(t, "parts"),
			Configs: genConfigMap(t, "configs"), Internal: rapid.Bool().Draw(t, "internal")}
	case 3:
		name := genTopicName.Draw(t, "name")
		c.DeleteTopic = &name
	case 4:
		c.CreatePartitions = &CreatePartitions{Topic: genTopicName.Draw(t, "name"), Partitions: genPartitions(t, "parts")}
	case 5:
		c.AlterConfigs = &AlterConfigs{Topic: genTopicName.Draw(t, "name"), Set: genConfigMap(t, "set"),
			Delete:  rapid.SliceOfN(rapid.SampledFrom([]string{"retention.ms", "x", "y"}), 0, 2).Draw(t, "delete"),
			Replace: rapid.Bool().Draw(t, "replace")}
	case 6:
		n := rapid.IntRange(1, 3).Draw(t, "reports")
		for i := 0; i < n; i++ {
			c.ReportLeaders = append(c.ReportLeaders, LeaderReport{Group: genGroup.Draw(t, "group"),
				Leader: genBrokerID.Draw(t, "leader"), Epoch: rapid.Int32Range(-1, 5).Draw(t, "epoch")})
		}
	case 7:
		id := genBrokerID.Draw(t, "id")
		c.AllocProducerIDs = &id
	case 8:
		c.Reassign = &Reassign{Topic: genTopicName.Draw(t, "name"), Partition: rapid.Int32Range(-1, 4).Draw(t, "partition"),
			Target: genReplicas(t, "target")}
	case 9:
		c.SetReplicas = &SetReplicas{Group: genGroup.Draw(t, "group"), Replicas: genReplicas(t, "replicas")}
	case 10:
		// A command with nothing set.
	case 11:
		c.CreateACLs = rapid.SliceOfN(rapid.Custom(genBinding), 0, 3).Draw(t, "bindings")
	case 12:
		c.DeleteACLs = rapid.SliceOfN(rapid.Custom(genFilter), 0, 2).Draw(t, "filters")
	case 13:
		c.ChangeRole = genRoleChange(t)
	case 14:
		c.AlterUser = &AlterUser{Name: genUserName.Draw(t, "user"),
			Upsert: rapid.SliceOfN(rapid.Custom(genCredential), 0, 2).Draw(t, "upsert"),
			Delete: rapid.SliceOfN(rapid.Int8Range(0, 3), 0, 2).Draw(t, "delete")}
	case 15:
		b := &BootstrapUsers{}
		for i := rapid.IntRange(0, 2).Draw(t, "bootstrapUsers"); i > 0; i-- {
			b.Users = append(b.Users, User{Name: genUserName.Draw(t, "user"),
				Scram: rapid.SliceOfN(rapid.Custom(genCredential), 0, 2).Draw(t, "scram")})
		}
		c.BootstrapUsers = b
	case 16:
		c.AlterClientQuota = genAlterClientQuota(t)
	default:
		// A well-formed placement, so that topics do get created.
		n := rapid.IntRange(1, 3).Draw(t, "partitions")
		ps := make([]Partition, n)
		for i := range ps {
			ps[i] = Partition{Index: int32(i), Replicas: rapid.SliceOfNDistinct(rapid.Int32Range(1, 3), 1, 3, rapid.ID[int32]).Draw(t, "replicas")}
		}
		c.CreateTopic = &Topic{Name: genTopicName.Draw(t, "name"), Partitions: ps}
	}
	return c
}

var (
	genACLName      = rapid.SampledFrom([]string{"a", "ab", "*", "kafka-cluster", ""})
	genACLPrincipal = rapid.SampledFrom([]string{"User:alice", "User:*", "Role:ops", "Role:viewer", "alice", "Role:bad name"})
	genRoleName     = rapid.SampledFrom([]string{"ops", "viewer", "admin", "", "bad name"})
)

// genBinding draws bindings over small sets, valid or not.
func genBinding(t *rapid.T) acl.Binding {
	return acl.Binding{
		ResourceType: acl.ResourceType(rapid.IntRange(0, 8).Draw(t, "rtype")), ResourceName: genACLName.Draw(t, "rname"),
		PatternType: acl.PatternType(rapid.IntRange(0, 5).Draw(t, "ptype")), Principal: genACLPrincipal.Draw(t, "principal"),
		Host: rapid.SampledFrom([]string{"*", "10.0.0.1", ""}).Draw(t, "host"), Operation: acl.Operation(rapid.IntRange(0, 15).Draw(t, "op")),
		Permission: acl.Permission(rapid.IntRange(0, 4).Draw(t, "perm")),
	}
}

func genFilter(t *rapid.T) acl.Filter {
	f := acl.Filter{
		ResourceType: acl.ResourceType(rapid.IntRange(0, 8).Draw(t, "rtype")), PatternType: acl.PatternType(rapid.IntRange(0, 5).Draw(t, "ptype")),
		Operation: acl.Operation(rapid.IntRange(0, 15).Draw(t, "op")), Permission: acl.Permission(rapid.IntRange(0, 4).Draw(t, "perm")),
	}
	if rapid.Bool().Draw(t, "named") {
		n := genACLName.Draw(t, "rname")
		f.ResourceName = &n
	}
	if rapid.Bool().Draw(t, "byPrincipal") {
		p := genACLPrincipal.Draw(t, "principal")
		f.Principal = &p
	}
	return f
}

func genRoleChange(t *rapid.T) *RoleChange {
	c := &RoleChange{Role: genRoleName.Draw(t, "role")}
	members := rapid.SliceOfN(genACLPrincipal, 0, 3)
	switch rapid.IntRange(0, 3).Draw(t, "roleOp") {
	case 0:
		c.Delete = true
	case 1:
		m := members.Draw(t, "set")
		c.Set = &m
	case 2:
		c.Add = members.Draw(t, "add")
	default:
		c.Remove = members.Draw(t, "remove")
	}
	return c
}

// genQuotaEntity draws a quota entity over a small universe, valid or
// not (unknown types, a type twice, an ip combined, a bad address).
func genQuotaEntity(t *rapid.T) QuotaEntity {
	n := rapid.IntRange(0, 3).Draw(t, "entityParts")
	var e QuotaEntity
	for i := 0; i < n; i++ {
		p := QuotaEntityPart{Type: rapid.SampledFrom([]string{QuotaEntityUser, QuotaEntityClientID, QuotaEntityIP, "group"}).Draw(t, "entityType")}
		if rapid.IntRange(0, 2).Draw(t, "entityDefault") > 0 {
			name := rapid.SampledFrom([]string{"alice", "bob", "10.0.0.1", "", "<default>"}).Draw(t, "entityName")
			p.Name = &name
		}
		e = append(e, p)
	}
	return e
}

func genAlterClientQuota(t *rapid.T) *AlterClientQuota {
	keys := rapid.SampledFrom([]string{QuotaProducerByteRate, QuotaConsumerByteRate, QuotaRequestPercentage,
		QuotaConnectionCreationRate, "x"})
	return &AlterClientQuota{Entity: genQuotaEntity(t),
		Set:    rapid.MapOfN(keys, rapid.SampledFrom([]float64{1024, 0, -5, 1.5, 200}), 0, 2).Draw(t, "quotaSet"),
		Remove: rapid.SliceOfN(keys, 0, 2).Draw(t, "quotaRemove")}
}

// genCommands draws a sequence, usually starting by registering a few
// brokers so that later commands can refer to them.
func genCommands(t *rapid.T) []*Command {
	var cs []*Command
	for id := int32(1); id <= int32(rapid.IntRange(0, 3).Draw(t, "registered")); id++ {
		cs = append(cs, &Command{RegisterBroker: &Broker{ID: id, Rack: genRack.Draw(t, "rack")}})
	}
	n := rapid.IntRange(0, 40).Draw(t, "n")
	for i := 0; i < n; i++ {
		cs = append(cs, genCommand(t))
	}
	return cs
}

// throughLog encodes and decodes c, as the controller log does.
func throughLog(t interface{ Fatalf(string, ...any) }, c *Command) *Command {
	d, err := DecodeCommand(c.Encode())
	if err != nil {
		t.Fatalf("command does not decode: %v", err)
	}
	return d
}

func resultString(r Result) string {
	s := fmt.Sprintf("%v/%d", r.Err, r.ProducerIDBase)
	if r.DeletedACLs != nil {
		s += fmt.Sprintf("/%v", r.DeletedACLs.Deleted)
	}
	return s
}
