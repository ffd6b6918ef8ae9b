package azopenai_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/outcome"
	"github.com/offpath/offpath/internal/tokens"
)

func TestClient_Embed_UsageMatchesSimulator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		texts        []string
		batch        int
		batchTokens  int
		wantRequests int
	}{
		{"one", []string{"hello"}, 0, 0, 1},
		{"batched by count", strings.Split(strings.Repeat("some words to embed,", 9)+"last", ","), 4, 0, 3},
		{"batched by tokens", []string{strings.Repeat("a", 400), strings.Repeat("b", 400), strings.Repeat("c", 400)}, 0, 150, 3},
		{"oversized text alone", []string{strings.Repeat("é", 1000), "x"}, 0, 100, 2},
		{"unicode", []string{"漢字のテキスト", "données", "😀"}, 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim, url := newQueueSim(t, nil)
			lim := &recordingLimiter{}
			c := newClient(t, url, lim, func(c *azopenai.QueueConfig) { c.EmbedBatch, c.EmbedBatchTokens = tt.batch, tt.batchTokens })
			got, err := c.Embed(context.Background(), embedDeployment, tt.texts)
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			var want int64
			for _, s := range tt.texts {
				want += int64(tokens.Text(s))
			}
			st := deployment(t, sim, embedDeployment)
			if got.Usage.PromptTokens != want || st.PromptTokens != want {
				t.Errorf("usage %+v, simulator counted %d, want %d prompt tokens", got.Usage, st.PromptTokens, want)
			}
			if got.Trace.Requests != tt.wantRequests || st.Requests != int64(tt.wantRequests) {
				t.Errorf("%d requests (simulator %d), want %d", got.Trace.Requests, st.Requests, tt.wantRequests)
			}
			if lim.total(embedDeployment) != st.TokensCharged {
				t.Errorf("limiter charged %d, simulator %d", lim.total(embedDeployment), st.TokensCharged)
			}
			if len(got.Vectors) != len(tt.texts) {
				t.Fatalf("%d vectors for %d texts", len(got.Vectors), len(tt.texts))
			}
			for i, v := range got.Vectors {
				if len(v) != 1536 {
					t.Errorf("vector %d has %d dimensions, want 1536", i, len(v))
				}
			}
		})
	}
}

func TestClient_Embed_OrderAndDeterminism(t *testing.T) {
	t.Parallel()
	_, url := newQueueSim(t, nil)
	c := newClient(t, url, nil, func(c *azopenai.QueueConfig) { c.EmbedBatch = 2 })
	texts := []string{"alpha", "beta", "gamma", "alpha"}
	got, err := c.Embed(context.Background(), embedDeployment, texts)
	if err != nil {
		t.Fatal(err)
	}
	if !equal(got.Vectors[0], got.Vectors[3]) || equal(got.Vectors[0], got.Vectors[1]) {
		t.Error("vectors are not in the order of their texts")
	}
	one, err := c.Embed(context.Background(), embedDeployment, []string{"gamma"})
	if err != nil {
		t.Fatal(err)
	}
	if !equal(one.Vectors[0], got.Vectors[2]) {
		t.Error("a text's vector differs between a batch and a single request")
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestClient_Summarize_UsageMatchesSimulator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		text       string
		maxTokens  int
		wantFinish string
	}{
		{"short", "A short document about queues and tokens in queues.", 256, "stop"},
		{"long", strings.Repeat("Paragraph about the quarterly report. ", 200), 256, "stop"},
		{"cut by max tokens", "Some text.", 3, "length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim, url := newQueueSim(t, nil)
			lim := &recordingLimiter{}
			c := newClient(t, url, lim, nil)
			got, err := c.Summarize(context.Background(), chatDeployment, tt.text, tt.maxTokens)
			if err != nil {
				t.Fatalf("Summarize: %v", err)
			}
			st := deployment(t, sim, chatDeployment)
			if got.Usage.PromptTokens != st.PromptTokens || got.Usage.CompletionTokens != st.CompletionTokens || got.Usage.PromptTokens == 0 {
				t.Errorf("usage %+v, simulator counted prompt %d completion %d", got.Usage, st.PromptTokens, st.CompletionTokens)
			}
			if got.Usage.CompletionTokens > int64(tt.maxTokens) {
				t.Errorf("%d completion tokens, max %d", got.Usage.CompletionTokens, tt.maxTokens)
			}
			if lim.total(chatDeployment) != st.TokensCharged {
				t.Errorf("limiter charged %d, simulator %d", lim.total(chatDeployment), st.TokensCharged)
			}
			if got.FinishReason != tt.wantFinish {
				t.Errorf("finish reason %q, want %q", got.FinishReason, tt.wantFinish)
			}
			// The simulator answers pseudo-text, not JSON: the fallback.
			if got.Structured || got.Text == "" || (tt.wantFinish == "stop" && len(got.Keywords) == 0) {
				t.Errorf("summary %+v: want the plain-text fallback with derived keywords", got)
			}
			if got.Trace.Attempts != 1 || got.Trace.Requests != 1 {
				t.Errorf("trace %+v, want one attempt", got.Trace)
			}
		})
	}
}

func TestClient_Summarize_TruncatesInput(t *testing.T) {
	t.Parallel()
	sim, url := newQueueSim(t, nil)
	c := newClient(t, url, nil, func(c *azopenai.QueueConfig) { c.SummaryInputTokens = 100 })
	text := strings.Repeat("é", 1000) // 2,000 bytes: cut to 400 at a rune boundary
	got, err := c.Summarize(context.Background(), chatDeployment, text, 50)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Truncated {
		t.Error("Truncated = false for a text over the limit")
	}
	if max := int64(tokens.Prompt(strings.Repeat("x", 400), strings.Repeat("x", 400))); deployment(t, sim, chatDeployment).PromptTokens > max {
		t.Errorf("prompt of %d tokens, want the text cut to 100 tokens", got.Usage.PromptTokens)
	}
}

func TestClient_Refusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		style     string
		text      string
		stage     string
		wantUsage bool
	}{
		{"prompt blocked, service innererror", aoaisim.InnerErrorService, "please " + aoaisim.DefaultPromptTrigger + " now", ingest.StagePrompt, false},
		{"prompt blocked, docs innererror", aoaisim.InnerErrorDocs, aoaisim.DefaultPromptTrigger, ingest.StagePrompt, false},
		{"prompt blocked, spec inner_error", aoaisim.InnerErrorSpec, aoaisim.DefaultPromptTrigger, ingest.StagePrompt, false},
		{"completion blocked", aoaisim.InnerErrorService, "text " + aoaisim.DefaultCompletionTrigger, ingest.StageCompletion, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim, url := newQueueSim(t, func(c *aoaisim.Config) { c.ContentFilter.InnerErrorStyle = tt.style })
			c := newClient(t, url, nil, nil)
			got, err := c.Summarize(context.Background(), chatDeployment, tt.text, 100)
			if outcome.Of(err) != outcome.Refused {
				t.Fatalf("Summarize = %v (%v), want refused", err, outcome.Of(err))
			}
			var r *ingest.Refusal
			if !errors.As(err, &r) {
				t.Fatalf("error %v does not wrap a *Refusal", err)
			}
			if r.Stage != tt.stage || len(r.Categories) != 1 || r.Categories[0] != "violence" {
				t.Errorf("refusal %+v, want stage %s, categories [violence]", r, tt.stage)
			}
			st := deployment(t, sim, chatDeployment)
			if r.Usage.PromptTokens != st.PromptTokens || r.Usage.CompletionTokens != st.CompletionTokens || got.Usage != r.Usage {
				t.Errorf("refusal usage %+v, summary usage %+v, simulator prompt %d completion %d", r.Usage, got.Usage, st.PromptTokens, st.CompletionTokens)
			}
			if tt.wantUsage != (r.Usage.PromptTokens > 0) {
				t.Errorf("refusal usage %+v: want usage %v", r.Usage, tt.wantUsage)
			}
			if got.Trace.Attempts != 1 || got.Trace.Requests != 1 || st.Filtered != 1 {
				t.Errorf("%d attempts, %d filtered: a refusal is never retried", got.Trace.Attempts, st.Filtered)
			}
		})
	}
}

func TestClient_Rejections(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		call func(*azopenai.QueueClient) error
		want outcome.Kind
	}{
		{"chat deployment for embeddings", func(c *azopenai.QueueClient) error {
			_, err := c.Embed(context.Background(), chatDeployment, []string{"x"})
			return err
		}, outcome.Rejected},
		{"empty embedding input", func(c *azopenai.QueueClient) error {
			_, err := c.Embed(context.Background(), embedDeployment, []string{"x", ""})
			return err
		}, outcome.Rejected},
		{"zero max tokens", func(c *azopenai.QueueClient) error {
			_, err := c.Summarize(context.Background(), chatDeployment, "x", 0)
			return err
		}, outcome.Rejected},
		{"unknown deployment is configuration: transient", func(c *azopenai.QueueClient) error {
			_, err := c.Summarize(context.Background(), "no-such-deployment", "x", 10)
			return err
		}, outcome.Transient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim, url := newQueueSim(t, nil)
			ft := newFakeTime()
			c := newClient(t, url, nil, ft.install)
			err := tt.call(c)
			if got := outcome.Of(err); got != tt.want {
				t.Fatalf("error %v is %v, want %v", err, got, tt.want)
			}
			st := sim.Stats()
			if n := st.Routes[aoaisim.RouteChat] + st.Routes[aoaisim.RouteEmbeddings]; n > 1 || len(ft.Waits()) > 0 {
				t.Errorf("%d requests, %d waits: not retried", n, len(ft.Waits()))
			}
		})
	}
}

func TestClient_WrongKey(t *testing.T) {
	t.Parallel()
	_, url := newQueueSim(t, nil)
	c := newClient(t, url, nil, func(c *azopenai.QueueConfig) { c.APIKey = "wrong" })
	_, err := c.Embed(context.Background(), embedDeployment, []string{"x"})
	if outcome.Of(err) != outcome.Transient || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong key: %v (%v), want a transient 401", err, outcome.Of(err))
	}
}

func TestNew_Config(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  azopenai.QueueConfig
	}{
		{"no endpoint", azopenai.QueueConfig{APIKey: "k"}},
		{"no auth", azopenai.QueueConfig{Endpoint: "https://x.openai.azure.com"}},
		{"batch too large", azopenai.QueueConfig{Endpoint: "https://x.openai.azure.com", APIKey: "k", EmbedBatch: 4096}},
	}
	for _, tt := range tests {
		if _, err := azopenai.NewQueueClient(tt.cfg, nil, zeroLogger()); err == nil {
			t.Errorf("%s: New accepted %+v", tt.name, tt.cfg)
		}
	}
}
