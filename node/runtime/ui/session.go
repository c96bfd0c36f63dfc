package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

const (
	cookiePrefix = "floe_ui"
	// sessionsMax caps live sessions: a flood of GET /login cannot grow
	// memory without bound.
	sessionsMax = 10000
)

// session is one browser's login. The password is kept (in memory only)
// because every request builds its Kafka client with it.
type session struct {
	id, csrf   string
	user, pass string
	authed     bool // logged in (or no login needed)
	created    time.Time
	seen       time.Time
}

// sessions is the store, keyed by the cookie's random id.
type sessions struct {
	mu        sync.Mutex
	byID      map[string]*session
	now       func() time.Time
	idle, max time.Duration
}

func newSessions(now func() time.Time, idle, max time.Duration) *sessions {
	return &sessions{byID: map[string]*session{}, now: now, idle: idle, max: max}
}

func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// get returns the request's live session, or nil. An expired session is
// removed.
func (ss *sessions) get(r *http.Request) *session {
	c, err := r.Cookie(cookieName(r))
	if err != nil || c.Value == "" {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.byID[c.Value]
	if s == nil {
		return nil
	}
	now := ss.now()
	if now.Sub(s.seen) > ss.idle || now.Sub(s.created) > ss.max {
		delete(ss.byID, s.id)
		return nil
	}
	s.seen = now
	return s
}

// create starts a session and sets its cookie. It first drops expired
// sessions; at the cap it drops the least recently seen one.
func (ss *sessions) create(w http.ResponseWriter, r *http.Request, user, pass string, authed bool) *session {
	now := ss.now()
	s := &session{id: randomToken(), csrf: randomToken(), user: user, pass: pass, authed: authed, created: now, seen: now}
	ss.mu.Lock()
	for id, o := range ss.byID {
		if now.Sub(o.seen) > ss.idle || now.Sub(o.created) > ss.max {
			delete(ss.byID, id)
		}
	}
	if len(ss.byID) >= sessionsMax {
		var oldest *session
		for _, o := range ss.byID {
			if oldest == nil || o.seen.Before(oldest.seen) {
				oldest = o
			}
		}
		delete(ss.byID, oldest.id)
	}
	ss.byID[s.id] = s
	ss.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: s.id, Path: "/", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode, MaxAge: int(ss.max / time.Second)})
	return s
}

// cookieName has the port in it: browsers keep cookies per host, not per
// port, and brokers on one host (make cluster) must not log each other's
// users out.
func cookieName(r *http.Request) string {
	_, port, err := net.SplitHostPort(r.Host)
	if err != nil || port == "" || strings.Trim(port, "0123456789") != "" {
		return cookiePrefix
	}
	return cookiePrefix + "_" + port
}

// drop ends a session and clears its cookie.
func (ss *sessions) drop(w http.ResponseWriter, r *http.Request, s *session) {
	if s != nil {
		ss.mu.Lock()
		delete(ss.byID, s.id)
		ss.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: "", Path: "/", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode, MaxAge: -1})
}

// checkCSRF refuses (403) a state-changing request whose token is not the
// session's, or whose Origin names another site.
func (s *Server) checkCSRF(w http.ResponseWriter, r *http.Request, sess *session) bool {
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			s.fail(w, r, sess, http.StatusForbidden, "cross-site request refused (Origin "+o+")")
			return false
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, formBytesMax)
	token := r.Header.Get("X-CSRF-Token")
	if token == "" {
		token = r.PostFormValue("csrf")
	}
	if token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(sess.csrf)) != 1 {
		s.fail(w, r, sess, http.StatusForbidden, "missing or wrong CSRF token: reload the page and try again")
		return false
	}
	return true
}

// formBytesMax bounds a form (the produce form's value is the big field).
const formBytesMax = 2 << 20

type loginData struct {
	Next, User string
	Mechanism  string
}

// loginForm shows the login form. It starts a not-yet-logged-in session
// so the form has a CSRF token; logging in replaces it (no fixation).
func (s *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	if s.cfg.SASLMechanism == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	sess := s.sessions.get(r)
	if sess == nil {
		sess = s.sessions.create(w, r, "", "", false)
	}
	p := s.pageFor(sess, "login", "Log in")
	p.Data = loginData{Next: safeNext(r.URL.Query().Get("next")), Mechanism: s.cfg.SASLMechanism}
	s.render(w, http.StatusOK, "login", p)
}

// login checks the credentials by a Kafka request made with them, then
// starts a fresh session holding them.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.cfg.SASLMechanism == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	pre := s.sessions.get(r)
	if pre == nil {
		s.fail(w, r, nil, http.StatusForbidden, "your login form expired: reload the page and try again")
		return
	}
	if !s.checkCSRF(w, r, pre) {
		return
	}
	user, pass := r.PostFormValue("user"), r.PostFormValue("password")
	next := safeNext(r.PostFormValue("next"))
	again := func(status int, msg string) {
		p := s.pageFor(pre, "login", "Log in")
		p.Error = msg
		p.Data = loginData{Next: next, User: user, Mechanism: s.cfg.SASLMechanism}
		s.render(w, status, "login", p)
	}
	if user == "" || pass == "" || len(user) > 255 || len(pass) > 1024 || strings.ContainsAny(user, "\x00,=") {
		again(http.StatusBadRequest, "give a user name (no comma, equals sign or NUL) and a password")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	cl, err := s.client(&session{user: user, pass: pass})
	if err == nil {
		err = cl.Ping(ctx)
		cl.Close()
	}
	if err != nil {
		status, msg := classify(err)
		if status == http.StatusUnauthorized {
			msg = "wrong user name or password"
		}
		again(status, "login failed: "+msg)
		return
	}
	s.sessions.drop(w, r, pre)
	s.sessions.create(w, r, user, pass, true)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, sess *session) {
	s.sessions.drop(w, r, sess)
	target := "/"
	if s.cfg.SASLMechanism != "" {
		target = "/login"
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// safeNext keeps a post-login redirect on this site: a path, not a URL.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.HasPrefix(next, "/login") {
		return "/"
	}
	return next
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
