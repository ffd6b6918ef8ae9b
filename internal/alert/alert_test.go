package alert_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/alert"
)

func TestSender_Raise(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var posted []alert.Alert
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a alert.Alert
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		posted = append(posted, a)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	t.Cleanup(failing.Close)

	tests := []struct {
		name    string
		webhook string
		posts   int
		warn    bool
	}{
		{"log only", "", 0, false},
		{"webhook", hook.URL, 1, false},
		{"failing webhook", failing.URL, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			ctx := zerolog.New(&buf).WithContext(context.Background())
			mu.Lock()
			before := len(posted)
			mu.Unlock()
			alert.New(tt.webhook, nil, nil).Raise(ctx, alert.Alert{Name: "batch_failed", Tenant: "contoso", Job: "j1", Message: "part failed",
				Fields: map[string]any{"part": 0}, At: time.Now()})
			var first map[string]any
			line, _, _ := strings.Cut(buf.String(), "\n")
			if err := json.Unmarshal([]byte(line), &first); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			if first["level"] != "error" || first["alert"] != "batch_failed" || first["tenant"] != "contoso" || first["job"] != "j1" || first["message"] != "offpath-alert name=batch_failed: part failed" {
				t.Errorf("alert log event = %v", first)
			}
			mu.Lock()
			got := len(posted) - before
			mu.Unlock()
			if got != tt.posts {
				t.Errorf("%d webhook posts, want %d", got, tt.posts)
			}
			if warned := strings.Contains(buf.String(), "alert webhook failed"); warned != tt.warn {
				t.Errorf("webhook failure logged: %v, want %v (%s)", warned, tt.warn, buf.String())
			}
		})
	}
	if len(posted) == 1 && (posted[0].Name != "batch_failed" || posted[0].Job != "j1") {
		t.Errorf("posted %+v", posted[0])
	}
}

// recorder is a Recorder that keeps what it is given, or fails.
type recorder struct {
	mu   sync.Mutex
	got  []alert.Alert
	fail bool
}

func (r *recorder) Record(ctx context.Context, a alert.Alert) error {
	if _, ok := ctx.Deadline(); !ok {
		return errors.New("record called without a deadline")
	}
	if r.fail {
		return errors.New("table unavailable")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, a)
	return nil
}

// TestSender_Raise_Records: every raised alert is recorded, with its time
// (now when the raiser gave none), even when the raiser's context is
// already cancelled; a failing record is logged and the alert still logged.
func TestSender_Raise_Records(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	ctx, cancel := context.WithCancel(zerolog.New(&buf).WithContext(context.Background()))
	cancel()
	rec := &recorder{}
	before := time.Now().UTC()
	alert.New("", nil, rec).Raise(ctx, alert.Alert{Name: "batch_expired", Tenant: "contoso", Job: "j2", Message: "expired"})
	if len(rec.got) != 1 || rec.got[0].Name != "batch_expired" || rec.got[0].Job != "j2" || rec.got[0].At.Before(before) {
		t.Fatalf("recorded %+v, want the batch_expired alert stamped now", rec.got)
	}

	buf.Reset()
	ctx = zerolog.New(&buf).WithContext(context.Background())
	alert.New("", nil, &recorder{fail: true}).Raise(ctx, alert.Alert{Name: "batch_failed", Message: "part failed"})
	out := buf.String()
	if !strings.Contains(out, "offpath-alert name=batch_failed: part failed") || !strings.Contains(out, "alert not recorded") {
		t.Errorf("log = %s, want the alert and the failed record", out)
	}
}
