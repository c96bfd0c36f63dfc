package itest

// The admin API through franz-go's kadm: topics created, described,
// altered (incrementally and wholesale), grown, trimmed and deleted, with
// Kafka's error codes for what must be refused, each effect checked by a
// second call (and the configs by what the broker then does), and the
// results kept across a restart. Topic auto-creation is off so a lookup
// of a deleted topic cannot bring it back.

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func ptr(s string) *string { return &s }

// adminBroker is a broker without topic auto-creation and a kadm client.
func adminBroker(t *testing.T) (*Broker, *kadm.Client) {
	b := start(t, WithFlags("--auto-create-topics=false"))
	return b, kadm.NewClient(kgoClient(t, b.KafkaAddr))
}

// topicConfig returns a topic's described value and source for name.
func topicConfig(t *testing.T, adm *kadm.Client, topic, name string) (string, kmsg.ConfigSource) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxFor(t, opWaitMax), topic)
	if err != nil {
		t.Fatalf("describe configs of %s: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		t.Fatalf("describe configs of %s: %v", topic, err)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			if c.Value == nil {
				return "<nil>", c.Source
			}
			return *c.Value, c.Source
		}
	}
	t.Fatalf("%s: config %s not described", topic, name)
	return "", 0
}

func wantConfig(t *testing.T, adm *kadm.Client, topic, name, value string, source kmsg.ConfigSource) {
	t.Helper()
	if v, s := topicConfig(t, adm, topic, name); v != value || s != source {
		t.Fatalf("%s: %s = %s (source %v), want %s (source %v)", topic, name, v, s, value, source)
	}
}

// partitionCount describes topic and returns its partition count, or the
// topic's error.
func partitionCount(t *testing.T, adm *kadm.Client, topic string) (int, error) {
	t.Helper()
	tds, err := adm.ListTopics(ctxFor(t, opWaitMax), topic)
	if err != nil {
		t.Fatalf("describe %s: %v", topic, err)
	}
	td, ok := tds[topic]
	if !ok {
		return 0, kerr.UnknownTopicOrPartition
	}
	if td.Err != nil {
		return 0, td.Err
	}
	for p, pd := range td.Partitions {
		if pd.Err != nil || pd.Leader != 1 || len(pd.Replicas) != 1 || pd.Replicas[0] != 1 {
			t.Fatalf("%s-%d: leader %d replicas %v err %v, want leader 1 on replica [1]", topic, p, pd.Leader, pd.Replicas, pd.Err)
		}
	}
	return len(td.Partitions), nil
}

func wantCode(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
}

func TestAdminTopicLifecycle(t *testing.T) {
	t.Parallel()
	b, adm := adminBroker(t)
	t.Run("create", func(t *testing.T) { adminCreate(t, adm) })
	t.Run("describe", func(t *testing.T) { adminDescribe(t, adm) })
	t.Run("alter", func(t *testing.T) { adminAlter(t, b, adm) })
	t.Run("create-partitions", func(t *testing.T) { adminCreatePartitions(t, adm) })
	t.Run("delete", func(t *testing.T) { adminDelete(t, b, adm) })
	t.Run("after-restart", func(t *testing.T) {
		b.Stop()
		b.Restart()
		adm := kadm.NewClient(kgoClient(t, b.KafkaAddr))
		waitLeaders(t, adm, "adm-a", 3)
		waitLeaders(t, adm, "adm-b", 3)
		wantConfig(t, adm, "adm-a", "segment.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)
		if n, err := partitionCount(t, adm, "adm-b"); err != nil || n != 3 {
			t.Fatalf("adm-b after restart: %d partitions, %v; want 3", n, err)
		}
		_, err := partitionCount(t, adm, "adm-gone")
		wantCode(t, "deleted topic after restart", err, kerr.UnknownTopicOrPartition)
	})
}

func adminCreate(t *testing.T, adm *kadm.Client) {
	ctx := ctxFor(t, opWaitMax)
	resp, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{
		"retention.ms": ptr("3600000"), "max.message.bytes": ptr("200000"),
	}, "adm-a")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create adm-a: %v", err)
	}
	waitLeaders(t, adm, "adm-a", 3)
	if resp.NumPartitions != 3 || resp.ReplicationFactor != 1 {
		t.Fatalf("create adm-a answered %d partitions, replication %d; want 3, 1", resp.NumPartitions, resp.ReplicationFactor)
	}
	if c := resp.Configs["retention.ms"]; c.Value == nil || *c.Value != "3600000" {
		t.Fatalf("create adm-a answered retention.ms %v, want 3600000", c.Value)
	}
	for _, topic := range []string{"adm-b", "adm-gone"} {
		if r, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
		waitLeaders(t, adm, topic, 1)
	}
	for _, c := range []struct {
		what       string
		topic      string
		partitions int32
		configs    map[string]*string
		want       error
	}{
		{"existing topic", "adm-a", 1, nil, kerr.TopicAlreadyExists},
		{"unknown config", "adm-x", 1, map[string]*string{"no.such.config": ptr("1")}, kerr.InvalidConfig},
		{"bad config value", "adm-x", 1, map[string]*string{"retention.ms": ptr("soon")}, kerr.InvalidConfig},
		{"zero partitions", "adm-x", 0, nil, kerr.InvalidPartitions},
		{"bad name", "adm/x", 1, nil, kerr.InvalidTopicException},
	} {
		r, err := adm.CreateTopic(ctx, c.partitions, 1, c.configs, c.topic)
		if err == nil {
			err = r.Err
		}
		wantCode(t, "create with "+c.what, err, c.want)
	}
	if _, err := partitionCount(t, adm, "adm-x"); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("a refused creation left topic adm-x behind (%v)", err)
	}
}

func adminDescribe(t *testing.T, adm *kadm.Client) {
	tds, err := adm.ListTopics(ctxFor(t, opWaitMax))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"adm-a", "adm-b", "adm-gone"} {
		if _, ok := tds[want]; !ok {
			t.Fatalf("listing all topics: %s missing from %v", want, tds.Names())
		}
	}
	if n, err := partitionCount(t, adm, "adm-a"); err != nil || n != 3 {
		t.Fatalf("adm-a: %d partitions, %v; want 3", n, err)
	}
	wantConfig(t, adm, "adm-a", "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, adm, "adm-a", "max.message.bytes", "200000", kmsg.ConfigSourceDynamicTopicConfig)
	// Defaults under Kafka's names and values.
	for name, def := range map[string]string{
		"cleanup.policy": "delete", "segment.bytes": "1073741824", "retention.bytes": "-1",
		"min.insync.replicas": "1", "message.timestamp.type": "CreateTime", "delete.retention.ms": "86400000",
		"segment.ms": "604800000",
	} {
		if v, s := topicConfig(t, adm, "adm-b", name); v != def || s == kmsg.ConfigSourceDynamicTopicConfig {
			t.Fatalf("adm-b: %s = %s (source %v), want the default %s", name, v, s, def)
		}
	}
	rcs, err := adm.DescribeTopicConfigs(ctxFor(t, opWaitMax), "adm-none")
	if err == nil {
		var rc kadm.ResourceConfig
		rc, err = rcs.On("adm-none", nil)
		if err == nil {
			err = rc.Err
		}
	}
	wantCode(t, "describe configs of an unknown topic", err, kerr.UnknownTopicOrPartition)
}

func adminAlter(t *testing.T, b *Broker, adm *kadm.Client) {
	ctx := ctxFor(t, opWaitMax)
	alter := func(what string, cfgs []kadm.AlterConfig, topic string, incremental bool, want error) {
		t.Helper()
		f := adm.AlterTopicConfigs
		if !incremental {
			f = adm.AlterTopicConfigsState
		}
		resps, err := f(ctx, cfgs, topic)
		if err == nil {
			var r kadm.AlterConfigsResponse
			r, err = resps.On(topic, nil)
			if err == nil {
				err = r.Err
			}
		}
		if want == nil && err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if want != nil {
			wantCode(t, what, err, want)
		}
	}
	// Incremental: set one, delete another (back to its default).
	alter("incremental set and delete", []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: ptr("7200000")},
		{Op: kadm.DeleteConfig, Name: "max.message.bytes"},
	}, "adm-a", true, nil)
	wantConfig(t, adm, "adm-a", "retention.ms", "7200000", kmsg.ConfigSourceDynamicTopicConfig)
	if v, s := topicConfig(t, adm, "adm-a", "max.message.bytes"); v != "1048588" || s == kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("deleted max.message.bytes reads %s (source %v), want the default 1048588", v, s)
	}

	// The broker acts on an altered config: a 2 KiB record is too large
	// once max.message.bytes is 1000.
	alter("set max.message.bytes", []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: ptr("1000")}}, "adm-a", true, nil)
	cl := kgoClient(t, b.KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(0),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // the limit applies to the batch as sent
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "adm-a", Value: make([]byte, 2048)}).FirstErr()
	wantCode(t, "2 KiB record with max.message.bytes 1000", err, kerr.MessageTooLarge)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "adm-a", Value: []byte("small")}).FirstErr(); err != nil {
		t.Fatalf("small record with max.message.bytes 1000: %v", err)
	}

	// Wholesale (AlterConfigs): what is not named returns to its default.
	alter("wholesale set", []kadm.AlterConfig{{Name: "segment.ms", Value: ptr("3600000")}}, "adm-a", false, nil)
	wantConfig(t, adm, "adm-a", "segment.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)
	if v, s := topicConfig(t, adm, "adm-a", "retention.ms"); v != "604800000" || s == kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("after a wholesale alter naming only segment.ms, retention.ms reads %s (source %v), want the default", v, s)
	}

	alter("bad value", []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: ptr("soon")}}, "adm-a", true, kerr.InvalidConfig)
	alter("unknown config", []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "no.such.config", Value: ptr("1")}}, "adm-a", true, kerr.InvalidConfig)
	alter("unknown topic", []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: ptr("1")}}, "adm-none", true, kerr.UnknownTopicOrPartition)
	wantConfig(t, adm, "adm-a", "segment.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)
}

func adminCreatePartitions(t *testing.T, adm *kadm.Client) {
	ctx := ctxFor(t, opWaitMax)
	resps, err := adm.UpdatePartitions(ctx, 3, "adm-b")
	if err == nil {
		err = resps["adm-b"].Err
	}
	if err != nil {
		t.Fatalf("grow adm-b to 3 partitions: %v", err)
	}
	waitLeaders(t, adm, "adm-b", 3)
	if n, err := partitionCount(t, adm, "adm-b"); err != nil || n != 3 {
		t.Fatalf("adm-b: %d partitions, %v; want 3", n, err)
	}
	resps, err = adm.UpdatePartitions(ctx, 2, "adm-b")
	if err == nil {
		err = resps["adm-b"].Err
	}
	wantCode(t, "shrink adm-b to 2 partitions", err, kerr.InvalidPartitions)
}

func adminDelete(t *testing.T, b *Broker, adm *kadm.Client) {
	ctx := ctxFor(t, opWaitMax)
	cl := kgoClient(t, b.KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "adm-gone", Value: fmt.Appendf(nil, "old-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := adm.DeleteTopic(ctx, "adm-gone")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("delete adm-gone: %v", err)
	}
	_, err = partitionCount(t, adm, "adm-gone")
	wantCode(t, "describe a deleted topic", err, kerr.UnknownTopicOrPartition)
	resp, err = adm.DeleteTopic(ctx, "adm-gone")
	if err == nil {
		err = resp.Err
	}
	wantCode(t, "delete a deleted topic", err, kerr.UnknownTopicOrPartition)

	// A topic created again under the same name starts empty.
	makeTopic(t, b.KafkaAddr, "adm-again", 1, nil)
	if r, err := adm.DeleteTopic(ctx, "adm-again"); err != nil || r.Err != nil {
		t.Fatalf("delete adm-again: %v %v", err, r.Err)
	}
	makeTopic(t, b.KafkaAddr, "adm-gone", 1, nil)
	if end := endOffsets(t, b.KafkaAddr, "adm-gone")[0]; end != 0 {
		t.Fatalf("adm-gone created again holds %d records of the deleted topic", end)
	}
	if r, err := adm.DeleteTopic(ctx, "adm-gone"); err != nil || r.Err != nil {
		t.Fatalf("delete adm-gone again: %v %v", err, r.Err)
	}
}

// TestAdminDeleteRecords trims a partition's start with DeleteRecords:
// the start offset moves, the high watermark stays, reads start there.
func TestAdminDeleteRecords(t *testing.T) {
	t.Parallel()
	b, adm := adminBroker(t)
	const topic = "trim"
	makeTopic(t, b.KafkaAddr, topic, 1, nil)
	cl := kgoClient(t, b.KafkaAddr)
	ctx := ctxFor(t, opWaitMax)
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 4})
	resps, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := resps.Lookup(topic, 0)
	if !ok || r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("DeleteRecords to 4: %+v", r)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := starts.Lookup(topic, 0); s.Err != nil || s.Offset != 4 {
		t.Fatalf("start offset after DeleteRecords: %+v, want 4", s)
	}
	if end := endOffsets(t, b.KafkaAddr, topic)[0]; end != 10 {
		t.Fatalf("high watermark %d after DeleteRecords, want 10", end)
	}
	rd := kgoClient(t, b.KafkaAddr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	fs := rd.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) == 0 || recs[0].Offset != 4 || string(recs[0].Value) != "r4" {
		t.Fatalf("reading from the start after DeleteRecords: %d records, first %+v", len(recs), recs)
	}
}
