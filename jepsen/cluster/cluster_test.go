package cluster

import "testing"

func TestNewValidates(t *testing.T) {
	for _, cfg := range []Config{
		{Nodes: 3, Image: "i"},
		{RunID: "r", Nodes: 0, Image: "i"},
		{RunID: "Bad_ID", Nodes: 1, Image: "i"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	c, err := New(Config{RunID: "r1", Nodes: 3, Image: "i"})
	if err != nil {
		t.Fatal(err)
	}
	args := ServeArgs(c, 2)
	want := map[string]string{"--node-id": "2", "--advertise-kafka-addr": "127.0.0.1:19093",
		"--advertise-raft-addr": "node2:9093", "--peers": "1@node1:9093,2@node2:9093,3@node3:9093"}
	for i := 0; i+1 < len(args); i++ {
		if v, ok := want[args[i]]; ok {
			if args[i+1] != v {
				t.Errorf("%s %s, want %s", args[i], args[i+1], v)
			}
			delete(want, args[i])
		}
	}
	if len(want) > 0 {
		t.Errorf("missing flags %v in %v", want, args)
	}
}
