package devhost

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/rs/zerolog"
)

type ctxT = context.Context

func zerologNop() zerolog.Logger { return zerolog.New(io.Discard) }

func serve(h http.Handler, fn string, body []byte) (int, string, []byte) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/"+fn, bytes.NewReader(body)))
	return rec.Code, rec.Header().Get("Content-Type"), rec.Body.Bytes()
}
