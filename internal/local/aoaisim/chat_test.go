package aoaisim_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"testing"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func chatParams(model string, prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: model,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You summarise tickets."),
			openai.UserMessage(prompt),
		},
	}
}

// wantPromptTokens applies the documented approximation to chatParams.
func wantPromptTokens(prompt string) int64 {
	return int64(aoaisim.PromptTokens([]string{"You summarise tickets.", prompt}, 0))
}

func TestChat_Surfaces(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{})
	ctx := context.Background()
	const prompt = "The printer on floor 3 is on fire again."
	var texts []string
	for _, c := range s.clients() {
		t.Run(c.name, func(t *testing.T) {
			var raw *http.Response
			cc, err := c.client.Chat.Completions.New(ctx, chatParams(chatDep, prompt), option.WithResponseInto(&raw))
			if err != nil {
				t.Fatalf("Chat.Completions.New: %v", err)
			}
			if cc.Object != "chat.completion" || cc.Model != "gpt-4o-mini-2024-07-18" || len(cc.Choices) != 1 {
				t.Fatalf("completion = object %q model %q choices %d", cc.Object, cc.Model, len(cc.Choices))
			}
			ch := cc.Choices[0]
			if ch.FinishReason != "stop" || ch.Message.Content == "" {
				t.Errorf("choice = finish %q content %q, want stop and text", ch.FinishReason, ch.Message.Content)
			}
			if got, want := cc.Usage.PromptTokens, wantPromptTokens(prompt); got != want {
				t.Errorf("prompt_tokens = %d, want %d", got, want)
			}
			if got, want := cc.Usage.CompletionTokens, int64(aoaisim.TextTokens(ch.Message.Content)); got != want {
				t.Errorf("completion_tokens = %d, want %d (ceil(len/4) of the text)", got, want)
			}
			if cc.Usage.TotalTokens != cc.Usage.PromptTokens+cc.Usage.CompletionTokens {
				t.Errorf("total_tokens = %d, want the sum", cc.Usage.TotalTokens)
			}
			for _, raw := range []string{cc.JSON.ExtraFields["prompt_filter_results"].Raw(), ch.JSON.ExtraFields["content_filter_results"].Raw()} {
				if raw == "" || !json.Valid([]byte(raw)) {
					t.Errorf("filter results missing or invalid: %q", raw)
				}
			}
			if raw.Header.Get("apim-request-id") == "" {
				t.Error("apim-request-id header missing")
			}
			texts = append(texts, ch.Message.Content)
		})
	}
	if len(texts) == 2 && texts[0] != texts[1] {
		t.Errorf("same input gave different text on the two surfaces: %q vs %q", texts[0], texts[1])
	}
}

func TestChat_MaxTokens(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{})
	tests := []struct {
		name   string
		params func(p *openai.ChatCompletionNewParams)
		limit  int64
		n      int
	}{
		{"max_tokens", func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(3) }, 3, 1},
		{"max_completion_tokens", func(p *openai.ChatCompletionNewParams) { p.MaxCompletionTokens = openai.Int(5) }, 5, 1},
		{"n=3", func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(4); p.N = openai.Int(3) }, 4, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := chatParams(chatDep, "Write a very long essay about printers.")
			tt.params(&p)
			cc, err := s.classic.Chat.Completions.New(context.Background(), p)
			if err != nil {
				t.Fatalf("Chat.Completions.New: %v", err)
			}
			if len(cc.Choices) != tt.n {
				t.Fatalf("choices = %d, want %d", len(cc.Choices), tt.n)
			}
			var sum int64
			for _, ch := range cc.Choices {
				toks := int64(aoaisim.TextTokens(ch.Message.Content))
				if toks > tt.limit || ch.FinishReason != "length" {
					t.Errorf("choice %d: %d tokens, finish %q; want <= %d and length", ch.Index, toks, ch.FinishReason, tt.limit)
				}
				sum += toks
			}
			if cc.Usage.CompletionTokens != sum {
				t.Errorf("completion_tokens = %d, want %d", cc.Usage.CompletionTokens, sum)
			}
		})
	}
}

func TestChat_Errors(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{})
	ctx := context.Background()
	tests := []struct {
		name   string
		client openai.Client
		model  string
		status int
		code   string
	}{
		{"wrong key classic", classicClientKey(s.url, "wrong"), chatDep, 401, "401"},
		{"wrong key v1", v1Client(s.url, option.WithAPIKey("wrong")), chatDep, 401, "401"},
		{"unknown deployment", s.classic, "nope", 404, "DeploymentNotFound"},
		{"unknown deployment v1", s.v1, "nope", 404, "DeploymentNotFound"},
		{"chat on embedding deployment", s.classic, embedDep, 400, "OperationNotSupported"},
		{"chat on batch deployment", s.v1, batchDep, 400, "OperationNotSupported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.client.Chat.Completions.New(ctx, chatParams(tt.model, "hello"))
			e := apiError(t, err)
			if e.StatusCode != tt.status || e.Code != tt.code {
				t.Errorf("error = %d %q, want %d %q (%s)", e.StatusCode, e.Code, tt.status, tt.code, e.RawJSON())
			}
		})
	}
}

// classicClientKey is a classic client with another key.
func classicClientKey(url, key string) openai.Client {
	return openai.NewClient(azureOptions(url, key)...)
}

func TestEmbeddings(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{})
	ctx := context.Background()
	tests := []struct {
		name   string
		client openai.Client
		params openai.EmbeddingNewParams
		dims   int
		inputs int
		tokens int64
	}{
		{"classic string", s.classic, openai.EmbeddingNewParams{Model: embedDep,
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello world")}}, 1536, 1, 3},
		{"v1 array", s.v1, openai.EmbeddingNewParams{Model: embedDep,
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "hello world"}}}, 1536, 2, 4},
		{"dimensions base64", s.v1, openai.EmbeddingNewParams{Model: embedDep, Dimensions: openai.Int(256),
			EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64,
			Input:          openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello world")}}, 256, 1, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := tt.client.Embeddings.New(ctx, tt.params)
			if err != nil {
				t.Fatalf("Embeddings.New: %v", err)
			}
			if len(res.Data) != tt.inputs || res.Usage.PromptTokens != tt.tokens || res.Usage.TotalTokens != tt.tokens {
				t.Fatalf("got %d vectors, usage %+v; want %d vectors, %d tokens", len(res.Data), res.Usage, tt.inputs, tt.tokens)
			}
			for _, d := range res.Data {
				var norm float64
				for _, x := range d.Embedding {
					norm += x * x
				}
				if len(d.Embedding) != tt.dims || math.Abs(norm-1) > 1e-3 {
					t.Errorf("vector %d: %d dims, norm² %.4f; want %d dims, unit", d.Index, len(d.Embedding), norm, tt.dims)
				}
			}
			again, err := tt.client.Embeddings.New(ctx, tt.params)
			if err != nil {
				t.Fatalf("Embeddings.New again: %v", err)
			}
			if again.Data[0].Embedding[0] != res.Data[0].Embedding[0] {
				t.Error("embedding is not deterministic")
			}
		})
	}
}
