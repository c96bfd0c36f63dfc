package runtime

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/floe-broker/floe/node/runtime/ui"
)

// adminServer (HTTPS with Security.AdminTLS) serves /metrics (Prometheus), /debug/pprof, /healthz (the
// process and its reactor answer) and /readyz (node.Reactor.Serving: a
// controller leader is known, the broker is registered, its metadata has
// caught up with the controller since it started, and every partition
// replica it holds knows its leader; 503 with the reason otherwise).
type adminServer struct {
	srv *http.Server
	ln  net.Listener
}

func startAdmin(addr string, b *Broker, tc *tls.Config) (*adminServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	b.metrics.reg.MustRegister(newReactorCollector(b), newShareCollector(b))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(b.metrics.reg, promhttp.HandlerOpts{}))
	// Profiles, for finding hot paths on a live broker. The admin address
	// is loopback by default; expose it only where profiling is welcome.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !b.loop.call(func() {}, 2*time.Second) {
			http.Error(w, "reactor not responding", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.Handle("/", ui.New(b.uiConfig())) // the web UI (package ui): every path the others do not claim
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		var ready bool
		var why string
		if !b.loop.call(func() { ready, why = b.reactor.Serving() }, 2*time.Second) {
			http.Error(w, "reactor not responding", http.StatusServiceUnavailable)
			return
		}
		if !ready {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	a := &adminServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go a.srv.Serve(ln)
	return a, nil
}

func (a *adminServer) addr() string { return a.ln.Addr().String() }

func (a *adminServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = a.srv.Shutdown(ctx)
}
