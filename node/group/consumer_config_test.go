package group

import (
	"testing"
	"time"
)

// A consumer group's own session timeout and heartbeat interval (its
// group configs) replace the broker's for that group only: the interval
// its members are told, and when a silent member is fenced. A change
// applies from a member's next heartbeat.
func TestConsumerGroupTimeoutsFromGroupConfig(t *testing.T) {
	h := newHarness(t, Config{}) // the broker's: 45 s and 5 s
	h.setTopic("t", 2)
	h.timeouts = map[string]ConsumerTimeouts{"short": {Session: 10 * time.Second, HeartbeatInterval: 2 * time.Second}}
	a, b := newClient("a", "t"), newClient("b", "t")
	if r := h.cgHeartbeat("short", a, nil); r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 2000 {
		t.Fatalf("short: code %d interval %d ms, want the group's 2000", r.ErrorCode, r.HeartbeatIntervalMillis)
	}
	if r := h.cgHeartbeat("g", b, nil); r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("g: code %d interval %d ms, want the broker's 5000", r.ErrorCode, r.HeartbeatIntervalMillis)
	}
	h.advance(9 * time.Second)
	if h.consumerGroup("short").Members["a"] == nil {
		t.Fatal("a fenced before the group's 10 s session ended")
	}
	h.advance(2 * time.Second)
	if h.consumerGroup("short").Members["a"] != nil {
		t.Fatal("a not fenced 11 s after its last heartbeat, with a 10 s session")
	}
	if h.consumerGroup("g").Members["b"] == nil {
		t.Fatal("b fenced after 11 s, with the broker's 45 s session")
	}
	// a longer session applies from the next heartbeat
	h.timeouts["short"] = ConsumerTimeouts{Session: 30 * time.Second}
	c := newClient("c", "t")
	if r := h.cgHeartbeat("short", c, nil); r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("c: code %d interval %d ms, want the broker's 5000 (the group's unset)", r.ErrorCode, r.HeartbeatIntervalMillis)
	}
	h.advance(20 * time.Second)
	if h.consumerGroup("short").Members["c"] == nil {
		t.Fatal("c fenced after 20 s, with the group's 30 s session")
	}
	h.advance(11 * time.Second)
	if h.consumerGroup("short").Members["c"] != nil {
		t.Fatal("c not fenced 31 s after its last heartbeat, with a 30 s session")
	}
}

// CheckConsumerTimeouts bounds a group's timeouts as Kafka's
// GroupConfig.validate does; the bounds default to Kafka's, widened to
// hold the broker's own timeouts.
func TestCheckConsumerTimeouts(t *testing.T) {
	kafka := Config{}.WithDefaults()
	short := Config{ConsumerSessionTimeout: 1500 * time.Millisecond, ConsumerHeartbeatInterval: 100 * time.Millisecond}.WithDefaults()
	cases := []struct {
		name string
		cfg  Config
		t    ConsumerTimeouts
		ok   bool
	}{
		{"the broker's", kafka, ConsumerTimeouts{}, true},
		{"longest session", kafka, ConsumerTimeouts{Session: time.Minute}, true},
		{"session below the minimum", kafka, ConsumerTimeouts{Session: 44 * time.Second}, false},
		{"session above the maximum", kafka, ConsumerTimeouts{Session: 61 * time.Second}, false},
		{"interval above the maximum", kafka, ConsumerTimeouts{HeartbeatInterval: 16 * time.Second}, false},
		{"interval below the minimum", kafka, ConsumerTimeouts{HeartbeatInterval: time.Second}, false},
		{"bounds widened to the broker's", short, ConsumerTimeouts{Session: 2 * time.Second, HeartbeatInterval: 200 * time.Millisecond}, true},
		{"session not above the interval", short, ConsumerTimeouts{Session: 2 * time.Second, HeartbeatInterval: 2 * time.Second}, false},
		{"interval not below the broker's session", short, ConsumerTimeouts{HeartbeatInterval: 15 * time.Second}, false},
	}
	for _, tc := range cases {
		if err := tc.cfg.CheckConsumerTimeouts(tc.t); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
