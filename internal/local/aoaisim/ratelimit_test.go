package aoaisim_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// limitedSim has one chat deployment with the given limits and a frozen
// rate-limit clock.
func limitedSim(t *testing.T, tpm, rpm int64) (*sim, *aoaisim.Clock) {
	t.Helper()
	rc := aoaisim.NewClock(epoch(), 0)
	s := newSim(t, aoaisim.Config{
		Deployments: []aoaisim.Deployment{{Name: "limited", Model: "gpt-4o-mini", TPM: tpm, RPM: rpm}},
		RateClock:   rc,
	})
	return s, rc
}

// limitedParams is a request whose TPM charge is wantPromptTokens(p) + max.
func limitedParams(maxTokens int64) openai.ChatCompletionNewParams {
	p := chatParams("limited", "ping")
	p.MaxTokens = openai.Int(maxTokens)
	return p
}

func header(t *testing.T, h http.Header, name string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(h.Get(name), 10, 64)
	if err != nil {
		t.Fatalf("header %s = %q: %v", name, h.Get(name), err)
	}
	return v
}

func TestRateLimit_Sequence(t *testing.T) {
	t.Parallel()
	charge := wantPromptTokens("ping") + 300
	tests := []struct {
		name      string
		tpm, rpm  int64
		maxTokens int64
		admitted  int
		wait      time.Duration
		message   string
	}{
		{"rpm derived from tpm (6 per 1000)", 1000, 0, 10, 6, 60 * time.Second, "call rate limit"},
		{"tpm charges prompt + max_tokens", 1000, -1, 300, int(1000 / charge), 60 * time.Second, "token rate limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, rc := limitedSim(t, tt.tpm, tt.rpm)
			ctx := context.Background()
			for i := range tt.admitted {
				var raw *http.Response
				if _, err := s.classic.Chat.Completions.New(ctx, limitedParams(tt.maxTokens), option.WithResponseInto(&raw)); err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if tt.rpm == 0 && header(t, raw.Header, "x-ratelimit-remaining-requests") != int64(tt.admitted-1-i) {
					t.Errorf("request %d: remaining requests = %s", i, raw.Header.Get("x-ratelimit-remaining-requests"))
				}
			}
			rc.Advance(20 * time.Second)
			_, err := s.classic.Chat.Completions.New(ctx, limitedParams(tt.maxTokens))
			e := apiError(t, err)
			if e.StatusCode != 429 || e.Code != "429" {
				t.Fatalf("error = %d %q, want 429 \"429\"", e.StatusCode, e.Code)
			}
			h := e.Response.Header
			wantWait := tt.wait - 20*time.Second
			if got := header(t, h, "retry-after-ms"); got != wantWait.Milliseconds() {
				t.Errorf("retry-after-ms = %d, want %d", got, wantWait.Milliseconds())
			}
			if got := header(t, h, "retry-after"); got != int64(wantWait/time.Second) {
				t.Errorf("retry-after = %d, want %d", got, int64(wantWait/time.Second))
			}
			if h.Get("x-ratelimit-remaining-tokens") == "" {
				t.Error("x-ratelimit-remaining-tokens missing on the 429")
			}
			if !strings.Contains(e.Message, tt.message) {
				t.Errorf("message = %q, want it to mention %q", e.Message, tt.message)
			}
			rc.Advance(wantWait)
			if _, err := s.classic.Chat.Completions.New(ctx, limitedParams(tt.maxTokens)); err != nil {
				t.Errorf("after retry-after: %v", err)
			}
		})
	}
}

func TestRateLimit_Load(t *testing.T) {
	t.Parallel()
	charge := wantPromptTokens("ping") + 100
	const requests = 60
	tests := []struct {
		name      string
		tpm       int64
		want429   int
		wantTotal int64
	}{
		{"below the limit", requests * charge, 0, requests * charge},
		{"above the limit", 20 * charge, requests - 20, 20 * charge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := limitedSim(t, tt.tpm, -1)
			jobs := make(chan struct{}, requests)
			for range requests {
				jobs <- struct{}{}
			}
			close(jobs)
			var mu sync.Mutex
			got429, ok := 0, 0
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range jobs {
						_, err := s.v1.Chat.Completions.New(context.Background(), limitedParams(100))
						mu.Lock()
						if err == nil {
							ok++
						} else {
							e := apiError(t, err)
							if e.StatusCode != 429 || e.Response.Header.Get("retry-after-ms") == "" || e.Response.Header.Get("retry-after") == "" ||
								e.Response.Header.Get("x-ratelimit-remaining-tokens") == "" {
								t.Errorf("error = %d, headers %v", e.StatusCode, e.Response.Header)
							}
							got429++
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if got429 != tt.want429 || ok+got429 != requests {
				t.Errorf("429s = %d of %d, want %d", got429, ok+got429, tt.want429)
			}
			st := s.srv.Stats().Deployments[0]
			if st.Throttled != int64(tt.want429) || st.TokensCharged != tt.wantTotal {
				t.Errorf("stats = throttled %d charged %d, want %d and %d", st.Throttled, st.TokensCharged, tt.want429, tt.wantTotal)
			}
		})
	}
}

// TestRateLimit_RealRetryAfter: with a rate clock sixty times faster than
// real time and RealRetryAfter, a 429 asks for the real time until the
// window frees (at most a real second for a simulated minute), and a
// client that waits that long gets in.
func TestRateLimit_RealRetryAfter(t *testing.T) {
	t.Parallel()
	charge := wantPromptTokens("ping") + 100
	s := newSim(t, aoaisim.Config{
		Deployments:    []aoaisim.Deployment{{Name: "limited", Model: "gpt-4o-mini", TPM: 2 * charge, RPM: -1}},
		RateClock:      aoaisim.NewClock(epoch(), 60),
		RealRetryAfter: true,
	})
	ctx := context.Background()
	var e *openai.Error
	for i := 0; e == nil; i++ {
		if i > 10 {
			t.Fatal("no 429 after 10 requests of a third of the TPM each")
		}
		if _, err := s.classic.Chat.Completions.New(ctx, limitedParams(100)); err != nil {
			e = apiError(t, err)
		}
	}
	wait := time.Duration(header(t, e.Response.Header, "retry-after-ms")) * time.Millisecond
	if e.StatusCode != 429 || wait <= 0 || wait > time.Second {
		t.Fatalf("429 asked for %v (status %d); want a real wait of at most a second for a simulated minute", wait, e.StatusCode)
	}
	// The pause is the subject, not a wait for something to happen: a
	// client that honours retry-after-ms waits that long in real time, and
	// the test checks that this is enough on the sped-up rate clock (no
	// event marks a sliding window's end).
	time.Sleep(wait)
	if _, err := s.classic.Chat.Completions.New(ctx, limitedParams(100)); err != nil {
		t.Errorf("after waiting the %v the 429 asked for: %v", wait, err)
	}
}
