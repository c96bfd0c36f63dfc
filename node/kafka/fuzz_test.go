package kafka

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzRequestDecode drives the request decode path (header, version check,
// kmsg body decode) with arbitrary frames. It must never panic, and what
// it accepts must be consistent: an advertised key at an advertised
// version, a request of that kind and version, which kmsg can encode again
// and decode back to the same bytes.
func FuzzRequestDecode(f *testing.F) {
	table, _ := newVersionTable(everyVersion())
	// Seeds: a default request of every advertised key at every version,
	// with and without a client ID, and with a populated body.
	for _, r := range table.apiKeys {
		for v := r.MinVersion; v <= r.MaxVersion; v++ {
			req := kmsg.RequestForKey(r.ApiKey)
			req.SetVersion(v)
			f.Add(kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed")).AppendRequest(nil, req, 1)[4:])
			f.Add(kmsg.NewRequestFormatter().AppendRequest(nil, req, 2)[4:])
		}
	}
	prod := kmsg.NewPtrProduceRequest()
	prod.Version, prod.Acks, prod.TransactionID = 9, -1, kmsg.StringPtr("txn")
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "t"
	part := kmsg.NewProduceRequestTopicPartition()
	part.Records = []byte("not really records")
	topic.Partitions = []kmsg.ProduceRequestTopicPartition{part}
	prod.Topics = []kmsg.ProduceRequestTopic{topic}
	f.Add(kmsg.NewRequestFormatter().AppendRequest(nil, prod, 3)[4:])
	f.Add(frame(apiVersionsKey, 99, 4, []byte{1, 2, 3})[4:])

	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeRequest(b, table)
		if err != nil {
			if _, ok := err.(*protocolError); !ok {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		vr := table.lookup(req.key)
		if !vr.advertised {
			t.Fatalf("accepted key %d, not advertised", req.key)
		}
		if req.kreq == nil {
			if req.key != apiVersionsKey || req.version <= vr.max {
				t.Fatalf("no body for key %d v%d", req.key, req.version)
			}
			return
		}
		if req.version < vr.min || req.version > vr.max {
			t.Fatalf("accepted %s v%d outside v%d-v%d", kmsg.NameForKey(req.key), req.version, vr.min, vr.max)
		}
		if req.kreq.Key() != req.key || req.kreq.GetVersion() != req.version {
			t.Fatalf("decoded %s v%d for key %d v%d", kmsg.NameForKey(req.kreq.Key()), req.kreq.GetVersion(), req.key, req.version)
		}
		// Re-encoding is a fixed point after one round: what kmsg
		// decodes, it encodes to bytes that decode to the same request.
		enc := req.kreq.AppendTo(nil)
		again := kmsg.RequestForKey(req.key)
		again.SetVersion(req.version)
		if err := again.ReadFrom(enc); err != nil {
			t.Fatalf("%s v%d: re-encoded request does not decode: %v", kmsg.NameForKey(req.key), req.version, err)
		}
		if enc2 := again.AppendTo(nil); !bytes.Equal(enc, enc2) {
			t.Fatalf("%s v%d: encoding is not stable", kmsg.NameForKey(req.key), req.version)
		}
		if req.key == apiVersionsKey {
			resp, _, _ := answerApiVersions(req, table)
			_ = resp.AppendTo(nil)
		}
	})
}

// everyVersion advertises every API kmsg knows at every version it
// decodes: whatever a handler's table holds, decoding must be safe.
func everyVersion() []ApiRange {
	var out []ApiRange
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		if req := kmsg.RequestForKey(key); req != nil {
			out = append(out, ApiRange{Key: key, MinVersion: 0, MaxVersion: req.MaxVersion()})
		}
	}
	return out
}
