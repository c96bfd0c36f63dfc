package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerGroupConfigs: consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms set on a GROUP resource are checked
// against the broker's bounds and each other (INVALID_CONFIG, nothing
// changed), described with source GROUP_CONFIG, and reach the group's
// coordinator: a member is told the group's heartbeat interval.
func TestConsumerGroupConfigs(t *testing.T) {
	c := newClusterWith(t, 1, 29, nil)
	c.waitReady()
	createTopic(t, c, 1, "t", 2, 1, nil)
	waitLeaders(t, c, "t", 2)
	for _, bad := range [][]string{
		{consumerSessionConfig, "10"},                                     // below group.consumer.min.session.timeout.ms (45 s)
		{consumerIntervalConfig, "16000"},                                 // above the 15 s maximum
		{consumerIntervalConfig, "x"},                                     // not a number
		{consumerSessionConfig, "45000", consumerIntervalConfig, "45000"}, // not above the interval
	} {
		if res := alterGroupConfigs(c, "cg", bad...); res.ErrorCode != kerr.InvalidConfig.Code {
			t.Fatalf("alter %v: %v", bad, kerr.ErrorForCode(res.ErrorCode))
		}
	}
	if res := alterGroupConfigs(c, "cg", consumerSessionConfig, "50000", consumerIntervalConfig, "6000"); res.ErrorCode != 0 {
		t.Fatalf("alter: %v %v", kerr.ErrorForCode(res.ErrorCode), res.ErrorMessage)
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Version = 4
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "cg"
	dc.Resources = append(dc.Resources, dr)
	got := map[string]string{}
	for _, cfg := range c.request(1, dc).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		got[cfg.Name] = *cfg.Value + "/" + cfg.Source.String()
	}
	for k, v := range map[string]string{consumerSessionConfig: "50000/GROUP_CONFIG", consumerIntervalConfig: "6000/GROUP_CONFIG"} {
		if got[k] != v {
			t.Errorf("describe %s = %q, want %q", k, got[k], v)
		}
	}
	code := func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode }
	for _, tc := range []struct {
		group    string
		interval int32
	}{{"cg", 6000}, {"other", 5000}} {
		resp, _ := groupCall(t, c, 1, tc.group, func() kmsg.Request {
			return consumerHeartbeatReq(tc.group, "m-"+tc.group, 0, "t")
		}, code)
		hr := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
		if hr.ErrorCode != 0 || hr.HeartbeatIntervalMillis != tc.interval {
			t.Errorf("%s: code %v interval %d ms, want %d", tc.group, kerr.ErrorForCode(hr.ErrorCode), hr.HeartbeatIntervalMillis, tc.interval)
		}
	}
}
