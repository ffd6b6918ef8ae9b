package monitor_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/monitor"
)

const resource = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.CognitiveServices/accounts/aoai"

// identity is a token credential holding the tokens the simulator's
// managed identity endpoint issues (the handler's credential asks the
// endpoint itself: internal/reconcile's end-to-end test).
type identity struct{ sim *aoaisim.Server }

func (i identity) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	tok, exp := i.sim.IssueToken(o.Scopes[0])
	return azcore.AccessToken{Token: tok, ExpiresOn: exp}, nil
}

// TestClient_Tokens reads, through the SDK's metrics client and over TLS,
// the simulator's token metrics: per deployment, what it served in the
// span, and nothing outside it.
func TestClient_Tokens(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	clock := aoaisim.NewClock(start, 0)
	sim, err := aoaisim.New(aoaisim.Config{Clock: clock, Deployments: []aoaisim.Deployment{
		{Name: "gpt-4o-mini", Model: "gpt-4o-mini"}, {Name: "embed", Model: "text-embedding-3-small"}}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	ts := httptest.NewTLSServer(sim)
	t.Cleanup(ts.Close)
	oai := openai.NewClient(option.WithBaseURL(ts.URL+"/openai/v1/"), option.WithAPIKey(aoaisim.DefaultKey), option.WithHTTPClient(ts.Client()))
	ctx := context.Background()
	chat := func() openai.CompletionUsage {
		r, err := oai.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini", MaxTokens: openai.Int(20),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Summarise the outage report.")}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Usage
	}
	clock.Advance(10 * time.Minute)
	u1 := chat()
	e, err := oai.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "embed", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("printer on fire")}})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour) // 11:10: another hour
	chat()

	c, err := monitor.New(identity{sim}, monitor.Config{ResourceID: resource, Endpoint: ts.URL, ClientOptions: azcore.ClientOptions{Transport: ts.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Tokens(ctx, start, start.Add(time.Hour))
	if err != nil {
		t.Fatalf("Tokens: %v", err)
	}
	if g := got["gpt-4o-mini"]; g.Prompt != u1.PromptTokens || g.Completion != u1.CompletionTokens || g.Prompt == 0 {
		t.Errorf("gpt-4o-mini 10:00-11:00 = %+v, want %d/%d", g, u1.PromptTokens, u1.CompletionTokens)
	}
	if g := got["embed"]; g.Prompt != e.Usage.PromptTokens || g.Completion != 0 {
		t.Errorf("embed = %+v, want %d prompt tokens", g, e.Usage.PromptTokens)
	}
	if len(got) != 2 {
		t.Errorf("deployments %v, want 2", got)
	}
	if _, err := monitor.New(identity{sim}, monitor.Config{ResourceID: "/subscriptions/x/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/s"}); err == nil ||
		!strings.Contains(err.Error(), "not an Azure OpenAI") {
		t.Errorf("New(a storage account) = %v", err)
	}
}

// TestGrain: the query's time grain tiles the span exactly, so that no
// bucket of Azure Monitor's (aligned to the grain) reaches outside it.
func TestGrain(t *testing.T) {
	t.Parallel()
	at := func(h, m int) time.Time { return time.Date(2026, 11, 3, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		from, to time.Time
		want     string
	}{
		{at(10, 0), at(11, 0), "PT1H"},
		{at(10, 5), at(10, 6), "PT1M"},
		{at(10, 5), at(10, 10), "PT5M"},
		{at(10, 15), at(10, 30), "PT15M"},
		{at(10, 30), at(11, 0), "PT30M"},
		{at(0, 0), at(0, 0).Add(24 * time.Hour), "P1D"},
		{at(0, 0), at(23, 59), "PT1M"},
		{at(0, 0), at(23, 0), "PT1H"},
		{at(10, 5), at(11, 5), "PT5M"}, // an hour, not on the hour
	} {
		if got := monitor.Grain(tc.from, tc.to); got != tc.want {
			t.Errorf("Grain(%s, %s) = %s, want %s", tc.from.Format("15:04"), tc.to.Format("15:04"), got, tc.want)
		}
	}
}
