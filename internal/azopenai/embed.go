package azopenai

import (
	"context"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/outcome"
	"github.com/offpath/offpath/internal/tokens"
)

// Embed returns an embedding for each text, from the embeddings deployment.
// Texts are sent in batches of at most QueueConfig.EmbedBatch inputs and
// QueueConfig.EmbedBatchTokens tokens (a text larger than that goes alone).
// Vectors travel base64-encoded, a quarter of the JSON size.
//
// On error the returned Embeddings hold the usage and trace so far: the
// batches that succeeded were charged. A refusal wraps an *ingest.Refusal with that
// usage.
func (c *QueueClient) Embed(ctx context.Context, deployment string, texts []string) (ingest.Embeddings, error) {
	out := ingest.Embeddings{Vectors: make([][]float32, 0, len(texts))}
	for i, t := range texts {
		if t == "" {
			return out, outcome.Reject("invalid embedding input", fmt.Errorf("text %d is empty", i))
		}
	}
	for start := 0; start < len(texts); {
		end, charge := start, 0
		for end < len(texts) && end-start < c.cfg.EmbedBatch {
			n := tokens.Text(texts[end])
			if end > start && charge+n > c.cfg.EmbedBatchTokens {
				break
			}
			charge += n
			end++
		}
		if err := c.embedBatch(ctx, deployment, texts[start:end], int64(charge), &out); err != nil {
			return out, err
		}
		start = end
	}
	return out, nil
}

func (c *QueueClient) embedBatch(ctx context.Context, deployment string, batch []string, charge int64, out *ingest.Embeddings) error {
	var resp *openai.CreateEmbeddingResponse
	var trace ingest.Trace
	err := c.do(ctx, request{
		deployment: deployment,
		operation:  "embeddings",
		charge:     charge,
		call: func(ctx context.Context, opts ...option.RequestOption) error {
			var err error
			resp, err = c.oa.Embeddings.New(ctx, openai.EmbeddingNewParams{
				Model:          deployment,
				Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: batch},
				EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64,
			}, opts...)
			return err
		},
	}, &trace)
	out.Trace.Add(trace)
	var sig *refusalSignal
	if errors.As(err, &sig) {
		return refuse(&ingest.Refusal{Stage: ingest.StagePrompt, Categories: promptCategories(sig.apiErr), Usage: out.Usage})
	}
	if err != nil {
		return err
	}
	out.Usage.Add(ledger.Usage{PromptTokens: resp.Usage.PromptTokens})
	out.Model = resp.Model
	if len(resp.Data) != len(batch) {
		return outcome.Retry(fmt.Errorf("embeddings %s: %d vectors for %d inputs", deployment, len(resp.Data), len(batch)), 0)
	}
	vecs := make([][]float32, len(batch))
	for _, d := range resp.Data {
		if d.Index < 0 || int(d.Index) >= len(batch) || vecs[d.Index] != nil {
			return outcome.Retry(fmt.Errorf("embeddings %s: bad or repeated index %d", deployment, d.Index), 0)
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		vecs[d.Index] = v
	}
	out.Vectors = append(out.Vectors, vecs...)
	return nil
}
