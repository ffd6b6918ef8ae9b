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

	"github.com/offpath/offpath/internal/aoaisim"
	"github.com/offpath/offpath/internal/monitor"
)

const resource = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.CognitiveServices/accounts/aoai"

// key is a token credential that hands out the simulator's key, as Entra
// ID would hand out a token.
type key struct{}

func (key) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: aoaisim.DefaultKey, ExpiresOn: time.Now().Add(time.Hour)}, nil
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

	c, err := monitor.New(key{}, monitor.Config{ResourceID: resource, Endpoint: ts.URL, ClientOptions: azcore.ClientOptions{Transport: ts.Client()}})
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
	if _, err := monitor.New(key{}, monitor.Config{ResourceID: "/subscriptions/x/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/s"}); err == nil ||
		!strings.Contains(err.Error(), "not an Azure OpenAI") {
		t.Errorf("New(a storage account) = %v", err)
	}
}
