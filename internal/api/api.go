// Package api is offpath's REST API, served by the `api` HTTP function in
// forwarding mode: the Functions host hands the original request to the
// handler (path prefix /api included), so the API is an ordinary
// http.Handler with Go's routing, tested without any host in between.
package api

import (
	"encoding/json"
	"net/http"
	"time"
)

// Build describes the running binary, for /api/v1/version.
type Build struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Go      string `json:"go"`
}

// Server is the REST API.
type Server struct {
	build   Build
	started time.Time
	mux     *http.ServeMux
}

// New returns the API for the given build, started now.
func New(build Build, now time.Time) *Server {
	s := &Server{build: build, started: now, mux: http.NewServeMux()}
	s.mux.HandleFunc("/api/v1/health", only(http.MethodGet, s.health))
	s.mux.HandleFunc("/api/v1/version", only(http.MethodGet, s.version))
	s.mux.HandleFunc("/", s.notFound)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"status":         "ok",
		"uptime_seconds": int(time.Since(s.started).Seconds()),
	})
}

func (s *Server) version(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.build)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such endpoint: " + r.Method + " " + r.URL.Path})
}

// only answers 405 with a JSON error for any method but method. (A catch-all
// pattern would otherwise turn ServeMux's 405s into 404s.)
func only(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": r.Method + " is not allowed here; use " + method})
			return
		}
		h(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
