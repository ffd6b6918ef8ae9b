package batch_test

import (
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/ledger"
)

// A completion the content filter stopped is billed the same whether the
// batch ran chat completions (finish_reason content_filter) or the
// Responses API (status incomplete, incomplete_details.reason
// content_filter): a request, a refusal, every token reported. The
// second-door audit meters with the same Meter.
func TestUsage_MeterCompletionRefusalBothAPIs(t *testing.T) {
	t.Parallel()
	chat := `{"custom_id":"a","response":{"status_code":200,"request_id":"r1","body":{"object":"chat.completion","choices":[{"index":0,"finish_reason":"content_filter","message":{"role":"assistant","content":""},"content_filter_results":{"violence":{"filtered":true,"severity":"high"}}}],"usage":{"prompt_tokens":31,"completion_tokens":12,"total_tokens":43,"prompt_tokens_details":{"cached_tokens":4}}}},"error":null}`
	responses := `{"custom_id":"b","response":{"status_code":200,"request_id":"r2","body":{"object":"response","status":"incomplete","incomplete_details":{"reason":"content_filter"},"output":[],"content_filters":[{"blocked":true,"source_type":"completion","content_filter_results":{"violence":{"filtered":true,"severity":"high"}}}],"usage":{"input_tokens":31,"input_tokens_details":{"cached_tokens":4},"output_tokens":12,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":43}}},"error":null}`
	meter := func(line string) (ledger.Usage, batch.Outcome) {
		t.Helper()
		res, err := batchfile.NewReader(strings.NewReader(line+"\n"), 0).Next()
		if err != nil {
			t.Fatalf("parse %s: %v", line, err)
		}
		var u ledger.Usage
		o := batch.Meter(&u, &res)
		return u, o
	}
	cu, co := meter(chat)
	ru, ro := meter(responses)
	want := ledger.Usage{PromptTokens: 31, CompletionTokens: 12, CachedTokens: 4, Requests: 1, Refusals: 1}
	if cu != want || co != batch.Refused {
		t.Errorf("chat form: %+v %v, want %+v refused", cu, co, want)
	}
	if ru != cu || ro != co {
		t.Errorf("Responses form: %+v %v, want what the chat form bills: %+v %v", ru, ro, cu, co)
	}
}
