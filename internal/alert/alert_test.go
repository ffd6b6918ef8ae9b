package alert_test

import (
	"bytes"
	"context"
	"encoding/json"
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
			alert.New(tt.webhook, nil).Raise(ctx, alert.Alert{Name: "batch_failed", Tenant: "contoso", Job: "j1", Message: "part failed",
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
