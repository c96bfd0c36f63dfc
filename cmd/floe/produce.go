package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	addCommand("produce", "write lines from stdin as records (kcat -P style)", runProduce)
}

const produceUsage = `usage: floe produce TOPIC [flags] < lines

Each line of stdin (without its newline) becomes one record's value, in
order, written to TOPIC. Flags (in any order with TOPIC):
  --topic          the topic, as a flag instead of TOPIC
  --key-separator  split each line at the first occurrence into key and
                   value; a line without it has no key
  --partition      write every record to this partition (default: keys
                   hash to partitions, keyless records spread)
  --acks           all (default), 1 or 0
  --compression    none (default), gzip, snappy, lz4 or zstd
  --brokers        comma-separated seed brokers (default 127.0.0.1:9092)
  --command-config Kafka client properties (TLS, SASL): see docs/security.md
  --timeout        how long a record may wait to be written (default 30s)

The topic is created with the brokers' defaults if it does not exist and
they auto-create topics. With acks=all the producer is idempotent: records
retried after a lost answer are written once. The count written goes to
stderr; the exit status is 1 if any record failed.
`

// produceConfig is a parsed floe produce invocation.
type produceConfig struct {
	topic     string
	separator []byte // nil: no keys
	partition int32  // -1: the partitioner picks
	opts      []kgo.Opt
}

func runProduce(args []string) error {
	return produceMain(context.Background(), args, os.Stdin, os.Stderr)
}

func produceMain(ctx context.Context, args []string, in io.Reader, errOut io.Writer) error {
	fs := flag.NewFlagSet("floe produce", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, produceUsage) }
	cf := addClientFlags(fs, 30*time.Second)
	topic := fs.String("topic", "", "topic to write to")
	sep := fs.String("key-separator", "", "split lines into key and value at the first occurrence")
	partition := fs.Int("partition", -1, "write every record to this partition")
	acks := fs.String("acks", "all", "all, 1 or 0")
	compression := fs.String("compression", "none", "none, gzip, snappy, lz4 or zstd")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	name, err := topicArg("produce", *topic, rest)
	if err != nil {
		return err
	}
	pc, err := newProduceConfig(name, *sep, *partition, *acks, *compression)
	if err != nil {
		return err
	}
	cl, err := cf.client(append(pc.opts, kgo.RecordDeliveryTimeout(*cf.timeout))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	n, err := produceLines(ctx, cl, pc, in)
	fmt.Fprintf(errOut, "produced %d records to %s\n", n, pc.topic)
	return cf.explain(err)
}

// newProduceConfig checks the flags and turns them into client options.
func newProduceConfig(topic, sep string, partition int, acks, compression string) (produceConfig, error) {
	pc := produceConfig{topic: topic, partition: -1}
	if sep != "" {
		pc.separator = []byte(sep)
	}
	pc.opts = append(pc.opts, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if partition < -1 || partition > 1<<31-1 {
		return pc, usagef("--partition %d: want a partition number", partition)
	}
	if partition >= 0 {
		pc.partition = int32(partition)
		pc.opts = append(pc.opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	switch acks {
	case "all", "-1":
		pc.opts = append(pc.opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		pc.opts = append(pc.opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		pc.opts = append(pc.opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return pc, usagef("--acks %q: want all, 1 or 0", acks)
	}
	codec, err := compressionCodec(compression)
	if err != nil {
		return pc, err
	}
	pc.opts = append(pc.opts, kgo.ProducerBatchCompression(codec))
	return pc, nil
}

func compressionCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, usagef("--compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// produceLines writes one record per line of in and waits for every one to
// be acknowledged. It stops reading at the first failure and returns how
// many records were written.
func produceLines(ctx context.Context, cl *kgo.Client, pc produceConfig, in io.Reader) (int, error) {
	var (
		mu     sync.Mutex
		done   int
		failed error
	)
	fail := func(err error) (stop bool) {
		mu.Lock()
		defer mu.Unlock()
		if failed == nil && err != nil {
			failed = err
		}
		return failed != nil
	}
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			fail(fmt.Errorf("line %d: %w", r.Context.Value(lineKey{}), err))
			return
		}
		mu.Lock()
		done++
		mu.Unlock()
	}
	rd := bufio.NewReaderSize(in, 64<<10)
	for line := 1; ; line++ {
		text, readErr := rd.ReadBytes('\n')
		if len(text) > 0 || readErr == nil {
			rec := pc.record(bytes.TrimSuffix(text, []byte("\n")))
			rec.Context = context.WithValue(ctx, lineKey{}, line)
			cl.Produce(ctx, rec, promise)
		}
		if readErr != nil && !errors.Is(readErr, io.EOF) {
			fail(fmt.Errorf("reading stdin: %w", readErr))
		}
		if readErr != nil || fail(nil) {
			break
		}
	}
	fail(cl.Flush(ctx))
	mu.Lock()
	defer mu.Unlock()
	return done, failed
}

// lineKey tags a record with the input line it came from.
type lineKey struct{}

// record makes the record of one input line (without its newline).
func (pc produceConfig) record(line []byte) *kgo.Record {
	rec := &kgo.Record{Value: line, Partition: pc.partition}
	if pc.separator != nil {
		if k, v, ok := bytes.Cut(line, pc.separator); ok {
			rec.Key, rec.Value = k, v
		}
	}
	return rec
}
