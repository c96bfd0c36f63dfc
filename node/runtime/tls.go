package runtime

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// TLSFiles names a certificate, its key and the CA bundle that verifies
// the other side (clients for a server, servers for a client), all PEM.
type TLSFiles struct {
	CertFile, KeyFile, CAFile string
}

// fileStamp is what says a file changed: its size and modification time.
type fileStamp struct {
	size int64
	mod  time.Time
}

func stampOf(path string) (fileStamp, error) {
	if path == "" {
		return fileStamp{}, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{fi.Size(), fi.ModTime()}, nil
}

// watchedFiles reloads something built from files when any of them
// changes, checking at most once per checkEvery, on use: no goroutine, and
// no restart needed. A reload that fails (a half-written file, a key that
// does not match) keeps the last good value and logs why; the next check
// tries again.
type watchedFiles struct {
	paths      []string
	checkEvery time.Duration
	log        *slog.Logger
	what       string
	load       func() error // builds the new value from the files and installs it

	mu        sync.Mutex
	stamps    []fileStamp
	lastCheck time.Time
}

func (w *watchedFiles) init() error {
	w.stamps = make([]fileStamp, len(w.paths))
	for i, p := range w.paths {
		s, err := stampOf(p)
		if err != nil {
			return err
		}
		w.stamps[i] = s
	}
	w.lastCheck = time.Now()
	return w.load()
}

// check reloads if a file changed since the last load.
func (w *watchedFiles) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if now.Sub(w.lastCheck) < w.checkEvery {
		return
	}
	w.lastCheck = now
	changed := false
	next := make([]fileStamp, len(w.paths))
	for i, p := range w.paths {
		s, err := stampOf(p)
		if err != nil {
			w.log.Warn("reload: cannot stat; keeping the loaded "+w.what, "file", p, "err", err)
			return
		}
		next[i] = s
		changed = changed || s != w.stamps[i]
	}
	if !changed {
		return
	}
	if err := w.load(); err != nil {
		w.log.Warn("reload: keeping the loaded "+w.what, "err", err)
		return
	}
	w.stamps = next
	w.log.Info("reloaded " + w.what)
}

// certReloadEvery is how often certificate files are checked for change.
const certReloadEvery = time.Second

// TLSReloader holds a certificate and a CA pool loaded from files and
// reloaded when they change. Its configs are TLS 1.2 or newer only.
type TLSReloader struct {
	files TLSFiles
	w     *watchedFiles

	mu   sync.RWMutex
	cert *tls.Certificate
	pool *x509.CertPool // nil without a CA file
}

// NewTLSReloader loads the files; an error names the bad one. CertFile and
// KeyFile may both be empty (a client that presents no certificate).
func NewTLSReloader(files TLSFiles, log *slog.Logger, checkEvery time.Duration) (*TLSReloader, error) {
	if (files.CertFile == "") != (files.KeyFile == "") {
		return nil, errors.New("TLS: a certificate file needs its key file, and the other way round")
	}
	if checkEvery <= 0 {
		checkEvery = certReloadEvery
	}
	r := &TLSReloader{files: files}
	r.w = &watchedFiles{paths: []string{files.CertFile, files.KeyFile, files.CAFile}, checkEvery: checkEvery,
		log: log, what: "TLS certificate (" + files.CertFile + ")", load: r.load}
	if err := r.w.init(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *TLSReloader) load() error {
	var cert *tls.Certificate
	if r.files.CertFile != "" {
		c, err := tls.LoadX509KeyPair(r.files.CertFile, r.files.KeyFile)
		if err != nil {
			return fmt.Errorf("TLS certificate %s / key %s: %w", r.files.CertFile, r.files.KeyFile, err)
		}
		cert = &c
	}
	var pool *x509.CertPool
	if r.files.CAFile != "" {
		pem, err := os.ReadFile(r.files.CAFile)
		if err != nil {
			return fmt.Errorf("TLS CA file: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("TLS CA file %s: no PEM certificate in it", r.files.CAFile)
		}
	}
	r.mu.Lock()
	r.cert, r.pool = cert, pool
	r.mu.Unlock()
	return nil
}

func (r *TLSReloader) current() (*tls.Certificate, *x509.CertPool) {
	r.w.check()
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cert, r.pool
}

// ServerConfig is a server config presenting the current certificate and,
// when clientAuth asks for client certificates, verifying them against
// the current CA file.
func (r *TLSReloader) ServerConfig(clientAuth tls.ClientAuthType) (*tls.Config, error) {
	if r.files.CertFile == "" {
		return nil, errors.New("TLS: a server needs a certificate and key file")
	}
	if clientAuth != tls.NoClientCert && r.files.CAFile == "" {
		return nil, errors.New("TLS: client authentication needs a client CA file")
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, pool := r.current()
			return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert},
				ClientAuth: clientAuth, ClientCAs: pool}, nil
		},
	}, nil
}

// ClientConfig is a client config for one connection: the current CA
// pool (the system's without a CA file) and certificate. Call it per
// dial, so new connections see reloaded files.
func (r *TLSReloader) ClientConfig(serverName string) *tls.Config {
	cert, pool := r.current()
	c := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: serverName}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

// ParseClientAuth parses --tls-client-auth: none, requested (verified when
// given) or required.
func ParseClientAuth(s string) (tls.ClientAuthType, error) {
	switch s {
	case "", "none":
		return tls.NoClientCert, nil
	case "requested":
		return tls.VerifyClientCertIfGiven, nil
	case "required":
		return tls.RequireAndVerifyClientCert, nil
	}
	return 0, fmt.Errorf("client auth %q: want none, requested or required", s)
}
