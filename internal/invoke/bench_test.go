package invoke_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/invoke"
)

// discardWriter is a ResponseWriter that keeps nothing, so the benchmark
// measures the protocol layer rather than a recorder.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkServiceBusInvocation measures the protocol overhead of one
// Service Bus invocation: decode the envelope, call a no-op function (with and
// without decoding the message and its metadata), encode the reply;
// "checked" registers the trigger binding, as the handler does, so that the
// Mux decodes the message once before the function decodes it again.
func BenchmarkServiceBusInvocation(b *testing.B) {
	decode := func(_ context.Context, r *invoke.Request) (invoke.Result, error) {
		_, err := r.ServiceBus("message")
		return invoke.Result{}, err
	}
	b.Run("noop", func(b *testing.B) {
		benchInvocation(b, "", func(context.Context, *invoke.Request) (invoke.Result, error) {
			return invoke.Result{}, nil
		})
	})
	b.Run("decode-message", func(b *testing.B) { benchInvocation(b, "", decode) })
	b.Run("checked-decode-message", func(b *testing.B) { benchInvocation(b, "message", decode) })
}

func benchInvocation(b *testing.B, binding string, fn invoke.Func) {
	body := envelope(&testing.T{}, "servicebus-binary.json")
	m := invoke.NewMux(zerolog.New(io.Discard), invoke.Options{})
	m.HandleTrigger("ingest-process", invoke.ServiceBusTrigger, binding, fn)
	req, _ := http.NewRequest(http.MethodPost, "/ingest-process", nil)
	req.Header.Set("X-Azure-Functions-InvocationId", "6f0b6b0e-0000-4000-8000-000000000001")
	req.ContentLength = int64(len(body))
	w := &discardWriter{h: http.Header{}}
	rd := bytes.NewReader(body)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		rd.Reset(body)
		req.Body = io.NopCloser(rd)
		m.ServeHTTP(w, req)
	}
}
