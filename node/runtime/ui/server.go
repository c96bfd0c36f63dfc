package ui

import (
	"bytes"
	"context"
	"crypto/tls"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Config says which Kafka listener the UI talks to and how.
type Config struct {
	// Addr is the bound address of the listener the UI's clients dial.
	// "" disables the UI: every page says why (Unavailable).
	Addr string
	// Advertised is this broker's advertised address on that listener:
	// metadata names it, and the UI dials Addr instead (the two differ
	// when the listener binds port 0 or 0.0.0.0). Other brokers' addresses
	// are dialed as advertised.
	Advertised string
	// SASLMechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 when the
	// listener authenticates with SASL: the UI then asks for a login and
	// uses it as the session's SASL credentials. "" means no login.
	SASLMechanism string
	// TLS, when set, gives the client TLS config for a dial to the named
	// server (an SSL or SASL_SSL listener).
	TLS func(serverName string) *tls.Config
	// NodeID is the broker serving the UI; RaftLocal, when set, reads its
	// Raft replicas (the Raft health page shows them once the broker has
	// granted the session DESCRIBE on the cluster).
	NodeID    int32
	RaftLocal func(ctx context.Context) ([]RaftGroup, error)
	// Unavailable, when Addr is "", says why the UI cannot run.
	Unavailable string
	// SessionIdle and SessionMax bound a session's life (zero: 30 minutes
	// and 12 hours).
	SessionIdle, SessionMax time.Duration
	// RequestTimeout bounds the Kafka work of one HTTP request (zero: 15
	// seconds).
	RequestTimeout time.Duration
	Logger         *slog.Logger
	// Now is the clock (nil: time.Now); tests move it to expire sessions.
	Now func() time.Time
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static/*
var staticFS embed.FS

// Server is the UI's http.Handler.
type Server struct {
	cfg      Config
	mux      *http.ServeMux
	pages    map[string]*template.Template
	sessions *sessions
	lag      *lagRings
}

// New builds the UI handler. It starts nothing: it needs no Close.
func New(cfg Config) *Server {
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 30 * time.Minute
	}
	if cfg.SessionMax <= 0 {
		cfg.SessionMax = 12 * time.Hour
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), pages: mustParsePages(),
		sessions: newSessions(cfg.Now, cfg.SessionIdle, cfg.SessionMax), lag: newLagRings(lagSamplesMax, lagGroupsMax)}
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", staticHandler(static)))
	s.mux.HandleFunc("GET /login", s.loginForm)
	s.mux.HandleFunc("POST /login", s.login)
	s.route("POST /logout", s.logout)
	s.route("GET /{$}", s.overview)
	s.route("GET /topics", s.topics)
	s.route("POST /topics", s.createTopic)
	s.route("GET /topics/{topic}", s.topic)
	s.route("POST /topics/{topic}/delete", s.deleteTopic)
	s.route("POST /topics/{topic}/config", s.alterTopicConfig)
	s.route("POST /topics/{topic}/partitions", s.addPartitions)
	s.route("GET /topics/{topic}/messages", s.browse)
	s.route("GET /produce", s.produceForm)
	s.route("POST /produce", s.produce)
	s.route("GET /groups", s.groups)
	s.route("GET /groups/{group}", s.group)
	s.route("POST /groups/{group}/reset", s.resetOffsets)
	s.route("GET /api/groups/{group}/lag", s.groupLagJSON)
	s.route("GET /share-groups/{group}", s.shareGroup)
	s.route("POST /share-groups/{group}/reset", s.resetShareOffsets)
	s.route("POST /share-groups/{group}/delete-offsets", s.deleteShareOffsets)
	s.route("GET /acls", s.acls)
	s.route("POST /acls", s.addACL)
	s.route("POST /acls/delete", s.removeACL)
	s.route("POST /users", s.addUser)
	s.route("POST /users/delete", s.removeUser)
	s.route("POST /roles", s.changeRole)
	s.route("GET /audit", s.audit)
	s.route("GET /dead-letters", s.deadLetterTopics)
	s.route("GET /dead-letters/{topic}", s.deadLetters)
	s.route("GET /raft", s.raft)
	s.route("GET /api/raft", s.raftJSON)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, nil, http.StatusNotFound, "no such page: "+r.URL.Path)
	})
	return s
}

// ServeHTTP adds the headers every answer carries, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
	s.mux.ServeHTTP(w, r)
}

// route wraps a page handler with the session check (and the CSRF check
// for POST): h runs only for a live, logged-in session.
func (s *Server) route(pattern string, h func(http.ResponseWriter, *http.Request, *session)) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Addr == "" {
			s.fail(w, r, nil, http.StatusServiceUnavailable, "the web UI is unavailable: "+s.cfg.Unavailable)
			return
		}
		sess := s.sessions.get(r)
		if sess == nil && s.cfg.SASLMechanism == "" {
			sess = s.sessions.create(w, r, "", "", true)
		}
		if sess == nil || !sess.authed {
			if isAPI(r) || r.Method != http.MethodGet {
				s.fail(w, r, nil, http.StatusUnauthorized, "log in first")
				return
			}
			http.Redirect(w, r, "/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if r.Method == http.MethodPost && !s.checkCSRF(w, r, sess) {
			return
		}
		h(w, r, sess)
	})
}

func isAPI(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/api/") }

// page is what every template gets.
type page struct {
	Title   string
	Nav     string
	User    string
	Login   bool // the UI asks for a login (SASL listener)
	CSRF    string
	Error   string
	Notice  string
	Status  int
	Data    any
	Partial bool
}

// render writes a page with status (200 unless the page carries an error
// status).
func (s *Server) render(w http.ResponseWriter, status int, name string, p page) {
	t, ok := s.pages[name]
	if !ok {
		http.Error(w, "no template "+name, http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	root := "layout"
	if p.Partial {
		root = "content"
	}
	if err := t.ExecuteTemplate(&buf, root, p); err != nil {
		s.cfg.Logger.Error("ui template", "page", name, "err", err)
		http.Error(w, "template error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// pageFor fills the common fields of a page from the session.
func (s *Server) pageFor(sess *session, nav, title string) page {
	p := page{Title: title, Nav: nav, Login: s.cfg.SASLMechanism != ""}
	if sess != nil {
		p.User, p.CSRF = sess.user, sess.csrf
	}
	return p
}

// fail answers an error: JSON for /api/ paths, an error page otherwise.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, sess *session, status int, msg string) {
	if isAPI(r) {
		writeJSON(w, status, map[string]any{"error": msg, "status": status})
		return
	}
	p := s.pageFor(sess, "", http.StatusText(status))
	p.Error, p.Status = msg, status
	s.render(w, status, "error", p)
}

// failErr answers a Kafka or validation error with the status it maps to.
func (s *Server) failErr(w http.ResponseWriter, r *http.Request, sess *session, what string, err error) {
	status, msg := classify(err)
	if status == http.StatusUnauthorized && sess != nil && s.cfg.SASLMechanism != "" {
		// The broker no longer takes this login (password changed, user
		// deleted): end the session, so the next page asks again.
		s.sessions.drop(w, r, sess)
		msg += "; log in again"
	}
	s.fail(w, r, sess, status, what+": "+msg)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// badInput is a validation error: 400 with its message.
type badInput struct{ msg string }

func (e badInput) Error() string { return e.msg }

func badf(format string, args ...any) error { return badInput{fmt.Sprintf(format, args...)} }

func isBadInput(err error) bool {
	var b badInput
	return errors.As(err, &b)
}

// staticHandler serves embedded assets with a cache header; the set is
// small and fixed, so no directory listing.
func staticHandler(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "max-age=300")
		files.ServeHTTP(w, r)
	})
}

var pagesOnce sync.Once
var parsedPages map[string]*template.Template

// mustParsePages parses the layout with each page's template once per
// process; the templates are embedded, so a parse error is a build bug.
func mustParsePages() map[string]*template.Template {
	pagesOnce.Do(func() {
		base := template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
		names, err := fs.Glob(templateFS, "templates/*.html")
		if err != nil {
			panic(err)
		}
		parsedPages = map[string]*template.Template{}
		for _, n := range names {
			name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
			if name == "layout" {
				continue
			}
			parsedPages[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, n))
		}
	})
	return parsedPages
}
