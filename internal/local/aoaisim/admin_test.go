package aoaisim_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"
)

func TestAdmin_StateAndClock(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{})
	ctx := context.Background()
	if _, err := s.classic.Chat.Completions.New(ctx, chatParams(chatDep, "hello")); err != nil {
		t.Fatalf("chat: %v", err)
	}
	b, err := createBatch(ctx, s.classic, upload(t, s.classic, joinLines(chatLines(2, batchDep)), 0))
	if err != nil {
		t.Fatalf("Batches.New: %v", err)
	}
	var clock struct {
		Now   time.Time `json:"now"`
		Speed float64   `json:"speed"`
	}
	if err := s.admin.Post(ctx, "_sim/clock", map[string]any{"advance": "1h"}, &clock); err != nil {
		t.Fatalf("POST /_sim/clock: %v", err)
	}
	if !clock.Now.Equal(epoch().Add(time.Hour)) || clock.Speed != 0 {
		t.Errorf("clock = %+v, want epoch+1h at speed 0", clock)
	}
	waitStatus(t, s.classic, b.ID, "completed")
	var st aoaisim.State
	if err := s.admin.Get(ctx, "_sim/state", nil, &st); err != nil {
		t.Fatalf("GET /_sim/state: %v", err)
	}
	if len(st.Batches) != 1 || st.Batches[0].ID != b.ID || st.Batches[0].Status != "completed" || st.Batches[0].Completed != 2 {
		t.Errorf("state batches = %+v", st.Batches)
	}
	if len(st.Files) != 3 { // input, output, errors
		t.Errorf("state files = %d, want 3", len(st.Files))
	}
	chat := st.Stats.Deployments[0]
	if chat.Name != chatDep || chat.Requests != 1 || chat.PromptTokens == 0 || st.Stats.Routes[aoaisim.RouteChat] != 1 {
		t.Errorf("chat stats = %+v routes %v", chat, st.Stats.Routes)
	}
	if st.Stats.Deployments[2].Requests != 2 {
		t.Errorf("batch deployment served %d lines, want 2", st.Stats.Deployments[2].Requests)
	}
	// The admin endpoints need a key like everything else.
	bad := openai.NewClient(option.WithBaseURL(s.url+"/"), option.WithAPIKey("wrong"), option.WithMaxRetries(0))
	err = bad.Get(ctx, "_sim/state", nil, &st)
	if e := apiError(t, err); e.StatusCode != 401 {
		t.Errorf("admin with a wrong key = %d, want 401", e.StatusCode)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"deployments":[{"name":"d","model":"gpt-4o-mini","tpm":2000}],
		"content_filter":{"prompt_triggers":["bad words",{"phrase":"worse","category":"hate"}]},
		"batch":{"validation_time":"30s","completion_window":86400},"speed":0}`)
	cfg, err := aoaisim.LoadConfig(good)
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if cfg.Batch.ValidationTime.D() != 30*time.Second || cfg.Batch.CompletionWindow.D() != 24*time.Hour ||
		len(cfg.ContentFilter.PromptTriggers) != 2 || cfg.ContentFilter.PromptTriggers[1].Category != "hate" || *cfg.Speed != 0 {
		t.Errorf("config = %+v", cfg)
	}
	srv, err := aoaisim.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer srv.Close()
	if d := srv.Deployments()[0]; d.RPM != 12 || d.Type != aoaisim.TypeStandard {
		t.Errorf("defaults: rpm %d type %q, want 12 (6 per 1000 TPM) and standard", d.RPM, d.Type)
	}
	if srv.Clock().Speed() != 0 {
		t.Errorf("speed = %v, want 0", srv.Clock().Speed())
	}

	if _, err := aoaisim.LoadConfig(write("typo.json", `{"deployment":[]}`)); err == nil {
		t.Error("unknown field accepted")
	}
	err = aoaisim.Config{Deployments: []aoaisim.Deployment{{Name: "a", Type: "provisioned"}, {Name: "a", Model: "m"}},
		Faults: []aoaisim.FaultRule{{ErrorRate: 0.7, HangRate: 0.7}}}.Validate()
	for _, want := range []string{"deployments[0].model", "deployments[0].type", "deployments[1].name: duplicate", "faults[0]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to name %s", err, want)
		}
	}
}
