package invoke

import (
	"context"
	"net/http"
	"runtime/debug"
	"time"
)

// serveForward runs a forwarded HTTP request through the same recover →
// logger → timeout chain as envelope invocations.
func (m *Mux) serveForward(w http.ResponseWriter, r *http.Request, h http.Handler) {
	start := time.Now()
	log := m.logger.With().
		Str("invocation_id", r.Header.Get("X-Azure-Functions-InvocationId")).
		Str("method", r.Method).Str("path", r.URL.Path).Logger()
	ctx, cancel := context.WithTimeout(log.WithContext(r.Context()), m.opts.Timeout)
	defer cancel()
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		if p := recover(); p != nil {
			log.Error().Str("stack", string(debug.Stack())).Msgf("panic: %v", p)
			if sw.status == 0 {
				writeError(sw, http.StatusInternalServerError, "handler panicked")
			}
		}
		log.Info().Int("status", sw.status).Dur("duration_ms", time.Since(start)).Msg("request")
	}()
	h.ServeHTTP(sw, r.WithContext(ctx))
}

// statusWriter remembers the status code for the request's log line.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
