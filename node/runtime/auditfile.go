package runtime

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/floe-broker/floe/node"
)

// auditFile appends audit records to a local file (--audit-log-file), one
// JSON line each. The reactor hands records over without waiting: they go
// through a bounded queue to a writer goroutine, which flushes when the
// queue runs dry; a full queue drops records and counts them (logged when
// the file is closed). The file holds the records as this broker generated
// them, without the chain link the leader of __audit_log adds.
type auditFile struct {
	f       *os.File
	queue   chan []byte
	done    chan struct{}
	log     *slog.Logger
	mu      sync.Mutex
	dropped int
	closed  bool
}

const auditFileQueue = 10000

func openAuditFile(path string, log *slog.Logger) (*auditFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log file: %w", err)
	}
	a := &auditFile{f: f, queue: make(chan []byte, auditFileQueue), done: make(chan struct{}), log: log}
	go a.run()
	return a, nil
}

func (a *auditFile) run() {
	defer close(a.done)
	w := bufio.NewWriter(a.f)
	for rec := range a.queue {
		_, err := w.Write(append(rec, '\n'))
		if err == nil && len(a.queue) == 0 {
			err = w.Flush()
		}
		if err != nil {
			a.log.Error("audit log file", "err", err)
		}
	}
	if err := w.Flush(); err != nil {
		a.log.Error("audit log file", "err", err)
	}
}

// write queues a record; it never blocks.
func (a *auditFile) write(rec []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	select {
	case a.queue <- rec:
	default:
		a.dropped++
	}
}

// close writes what is queued and closes the file (nil-safe).
func (a *auditFile) close() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	close(a.queue)
	a.mu.Unlock()
	<-a.done
	if a.dropped > 0 {
		a.log.Warn("audit log file: records dropped (queue full)", "dropped", a.dropped)
	}
	return a.f.Close()
}

// AuditAuthentication records an authentication (its outcome, mechanism
// and reason; never a secret) in the audit log. Any goroutine may call
// it: the record is made on the reactor's thread
// (node.Reactor.AuditAuthentication).
func (b *Broker) AuditAuthentication(c node.Client, principal, mechanism string, ok bool, reason string) {
	b.loop.post(func() { b.reactor.AuditAuthentication(c, principal, mechanism, ok, reason) })
}
