package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/share"
)

func alterGroupConfigs(c *cluster, g string, kv ...string) *kmsg.IncrementalAlterConfigsResponseResource {
	return alterGroupConfigsAt(c, 1, g, kv...)
}

// alterGroupConfigsAt is alterGroupConfigs sent to broker id.
func alterGroupConfigsAt(c *cluster, id int32, g string, kv ...string) *kmsg.IncrementalAlterConfigsResponseResource {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, g
	for i := 0; i+1 < len(kv); i += 2 {
		cc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cc.Name, cc.Value = kv[i], kmsg.StringPtr(kv[i+1])
		rr.Configs = append(rr.Configs, cc)
	}
	req.Resources = append(req.Resources, rr)
	return &c.request(id, req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
}

// TestShareGroupConfigs: share.* group configs set with
// IncrementalAlterConfigs on a GROUP resource are described with source
// GROUP_CONFIG (the others with the broker's value) and take effect: the
// group starts at the earliest offset though the broker says latest, its
// lock is 1 s, and a record released twice is archived at the group's
// limit of 2. Unknown names and bad values are INVALID_CONFIG and change
// nothing.
func TestShareGroupConfigs(t *testing.T) {
	c := newClusterWith(t, 1, 23, nil)
	c.waitReady()
	createTopic(t, c, 1, "q", 1, 1, nil)
	waitLeaders(t, c, "q", 1)
	produceValues(t, c, "q", 3)
	for _, bad := range [][]string{{"share.delivery.count.limit", "11"}, {"share.auto.offset.reset", "middle"}, {"share.nope", "1"},
		{"share.record.lock.duration.ms", "x"}} {
		if res := alterGroupConfigs(c, "sg", bad...); res.ErrorCode != kerr.InvalidConfig.Code {
			t.Fatalf("alter %v: %v", bad, kerr.ErrorForCode(res.ErrorCode))
		}
	}
	if res := alterGroupConfigs(c, "sg", "share.auto.offset.reset", "earliest", "share.delivery.count.limit", "2",
		"share.record.lock.duration.ms", "1000"); res.ErrorCode != 0 {
		t.Fatalf("alter: %v %v", kerr.ErrorForCode(res.ErrorCode), res.ErrorMessage)
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Version = 4
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
	dc.Resources = append(dc.Resources, dr)
	got := map[string]string{}
	for _, cfg := range c.request(1, dc).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		got[cfg.Name] = *cfg.Value + "/" + cfg.Source.String()
	}
	want := map[string]string{"share.auto.offset.reset": "earliest/GROUP_CONFIG", "share.delivery.count.limit": "2/GROUP_CONFIG",
		"share.record.lock.duration.ms": "1000/GROUP_CONFIG", "share.isolation.level": "read_uncommitted/STATIC_BROKER_CONFIG"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("describe %s = %q, want %q", k, got[k], v)
		}
	}

	shareJoin(t, c, 1, "sg", "a", "q")
	f := c.request(1, shareFetchOf(c, "q", "sg", "a", 0)).(*kmsg.ShareFetchResponse)
	if got := f.Topics[0].Partitions[0].AcquiredRecords; len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 2 {
		t.Fatalf("first fetch acquired %+v, want 0-2 (share.auto.offset.reset=earliest for the group)", got)
	}
	if f.AcquisitionLockTimeoutMillis != 1000 {
		t.Errorf("lock %d ms, want the group's 1000", f.AcquisitionLockTimeoutMillis)
	}
	epoch := int32(1)
	for round := 2; round <= 3; round++ {
		a := c.request(1, shareAckOf(c, "q", "sg", "a", epoch, ackBatch(0, 2, share.AckRelease))).(*kmsg.ShareAcknowledgeResponse)
		if a.ErrorCode != 0 || a.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("release: %v", kerr.ErrorForCode(a.Topics[0].Partitions[0].ErrorCode))
		}
		epoch++
		f = c.request(1, shareFetchOf(c, "q", "sg", "a", epoch)).(*kmsg.ShareFetchResponse)
		epoch++
		got := f.Topics[0].Partitions[0].AcquiredRecords
		if round == 2 && (len(got) != 1 || got[0].DeliveryCount != 2) {
			t.Fatalf("after one release acquired %+v, want 0-2 with count 2", got)
		}
		if round == 3 && len(got) != 0 {
			t.Fatalf("after a release at the group's limit of 2 acquired %+v, want nothing (archived)", got)
		}
	}
}
