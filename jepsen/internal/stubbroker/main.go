package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// advertised is a listener that reports the address clients must use
// (kfake advertises its listener's address).
type advertised struct {
	net.Listener
	addr net.Addr
}

func (a advertised) Addr() net.Addr { return a.addr }

func main() {
	if len(os.Args) == 3 && os.Args[1] == "probe" {
		probe(os.Args[2])
	}
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: stubbroker serve [floe serve flags] | stubbroker probe host:port")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	kafkaAddr := fs.String("kafka-addr", "127.0.0.1:9092", "listen address")
	advertise := fs.String("advertise-kafka-addr", "", "address advertised to clients")
	adminAddr := fs.String("admin-addr", "", "HTTP /readyz address")
	dataDir := fs.String("data-dir", "", "persistence directory")
	sync := fs.Bool("sync", false, "fsync every write")
	partitions := fs.Int("default-partitions", 1, "partitions of auto-created topics")
	for _, ignored := range []string{"node-id", "raft-addr", "advertise-raft-addr", "peers", "join", "rack", "log-level"} {
		fs.String(ignored, "", "accepted and ignored (floe compatibility)")
	}
	_ = fs.Parse(os.Args[2:])
	if *advertise == "" {
		*advertise = *kafkaAddr
	}
	adv, err := net.ResolveTCPAddr("tcp", *advertise)
	if err != nil {
		fatal(err)
	}
	_, port, _ := net.SplitHostPort(*kafkaAddr)
	p, _ := strconv.Atoi(port)
	opts := []kfake.Opt{
		kfake.NumBrokers(1), kfake.Ports(p), kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(*partitions),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			ln, err := net.Listen(network, *kafkaAddr)
			if err != nil {
				return nil, err
			}
			return advertised{ln, adv}, nil
		}),
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
	}
	if *sync {
		opts = append(opts, kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fatal(err)
	}
	if *adminAddr != "" {
		go serveAdmin(*adminAddr)
	}
	fmt.Fprintf(os.Stderr, "stubbroker serving on %s, advertising %s\n", *kafkaAddr, *advertise)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	c.Close()
}

// probe exits 0 if a TCP connection to addr opens within a second: the
// Docker suite's tests run it inside a container (docker exec) to see what
// a partition cut off.
func probe(addr string) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
	c.Close()
	os.Exit(0)
}

func serveAdmin(addr string) {
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }
	mux.HandleFunc("/readyz", ok)
	mux.HandleFunc("/healthz", ok)
	fatal(http.ListenAndServe(addr, mux))
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "stubbroker:", err)
	os.Exit(1)
}
