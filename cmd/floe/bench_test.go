package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/floe-broker/floe/internal/bench"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestBenchRejectsBadInvocations(t *testing.T) {
	for _, args := range [][]string{
		{"bogus-mode"},
		{"produce", "--acks", "2"},
		{"produce", "--compression", "brotli"},
		{"produce", "--idempotent", "maybe"},
		{"produce", "--acks", "1", "--idempotent", "true"},
		{"produce", "--size", "-1"},
		{"produce", "--partitions", "0"},
		{"produce", "--rate", "-3"},
		{"produce", "--no-such-flag"},
		{"produce", "stray-argument"},
		{"nats-produce", "--window", "0"},
		{"nats-produce", "--storage", "tape"},
		{"startup"}, // no --data-dir
		{"startup", "--data-dir", "/nonexistent/floe", "--runs", "0"},
	} {
		if err := runBench(args); err == nil {
			t.Errorf("floe bench %s: accepted", strings.Join(args, " "))
		}
	}
	if err := runBench(nil); !errors.Is(err, errUsage) {
		t.Errorf("floe bench with no mode: %v, want a usage error", err)
	}
}

func TestParseIdempotent(t *testing.T) {
	for _, c := range []struct {
		v, acks string
		want    bool
	}{{"auto", "all", true}, {"auto", "1", false}, {"auto", "-1", true}, {"false", "all", false}, {"true", "all", true}} {
		if got, err := parseIdempotent(c.v, c.acks); err != nil || got != c.want {
			t.Errorf("parseIdempotent(%q, %q) = %v, %v; want %v", c.v, c.acks, got, err, c.want)
		}
	}
}

func TestBenchProduceJSONAgainstFakeBroker(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out bytes.Buffer
	err = runKafkaBench(context.Background(), bench.ModeProduce, []string{
		"--brokers", strings.Join(c.ListenAddrs(), ","), "--topic", "cli", "--partitions", "2",
		"--count", "500", "--size", "64", "--json", "--progress", "0", "--label", "cli-test",
	}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var res bench.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("--json output %q: %v", out.String(), err)
	}
	if res.Label != "cli-test" || res.Produce == nil || res.Produce.Messages != 500 || res.Produce.Bytes != 500*64 {
		t.Fatalf("result %+v", res)
	}
	if res.Kafka == nil || !res.Kafka.Idempotent || res.Kafka.Duration != 0 {
		t.Fatalf("settings %+v: want idempotent (auto with acks=all) and no duration with --count", res.Kafka)
	}
}

func TestSpreadOf(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want spread
	}{
		{nil, spread{}},
		{[]float64{3}, spread{3, 3, 3}},
		{[]float64{5, 1, 3}, spread{3, 1, 5}},
		{[]float64{4, 1, 2, 9}, spread{3, 1, 9}},
	} {
		if got := spreadOf(c.in); got != c.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", c.in, got, c.want)
		}
	}
}
