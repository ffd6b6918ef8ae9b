package batchfile_test

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/ledger"
)

const okLine = `{"id":"batch_req_1","custom_id":"j.0.1.AAAAAAAA","response":{"status_code":200,"request_id":"r1","body":{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Hello."},"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}],"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"jailbreak":{"filtered":false,"detected":false}}}],"usage":{"prompt_tokens":27,"completion_tokens":24,"total_tokens":51,"prompt_tokens_details":{"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":5},"future_field":{"x":1}}},"extra":true},"error":null,"surprise":[1,2]}`

func TestParse_Lines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		line string
		want batchfile.Result
	}{
		{"ok with every usage field and unknown fields", okLine, batchfile.Result{
			CustomID: "j.0.1.AAAAAAAA", Outcome: batchfile.OK, StatusCode: 200, RequestID: "r1", FinishReason: "stop", Text: "Hello.",
			Usage: ledger.Usage{PromptTokens: 27, CompletionTokens: 24, CachedTokens: 3, ReasoningTokens: 5}}},
		{"ok without details", `{"custom_id":"a","response":{"status_code":200,"body":{"choices":[{"finish_reason":"length","message":{"content":"Hi"}}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}}}`,
			batchfile.Result{CustomID: "a", Outcome: batchfile.OK, StatusCode: 200, FinishReason: "length", Text: "Hi", Usage: ledger.Usage{PromptTokens: 1, CompletionTokens: 2}}},
		{"completion filtered", `{"custom_id":"b","response":{"status_code":200,"request_id":"r","body":{"choices":[{"finish_reason":"content_filter","message":{"content":""},"content_filter_results":{"violence":{"filtered":true,"severity":"high"},"hate":{"filtered":false},"error":{"code":"x"}}}],"usage":{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17}}}}`,
			batchfile.Result{CustomID: "b", Outcome: batchfile.Refused, RefusedBy: batchfile.RefusedCompletion, Categories: []string{"violence"}, StatusCode: 200, RequestID: "r", FinishReason: "content_filter", Usage: ledger.Usage{PromptTokens: 10, CompletionTokens: 7}}},
		{"prompt filtered, service spelling", `{"custom_id":"c","response":{"status_code":400,"body":{"error":{"code":"content_filter","message":"The response was filtered","param":"prompt","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"violence":{"filtered":true,"severity":"medium"},"sexual":{"filtered":false}}}}}}}`,
			batchfile.Result{CustomID: "c", Outcome: batchfile.Refused, RefusedBy: batchfile.RefusedPrompt, Categories: []string{"violence"}, StatusCode: 400, Code: "content_filter", Message: "The response was filtered"}},
		{"prompt filtered, docs spelling", `{"custom_id":"d","response":{"status_code":400,"body":{"error":{"code":"content_filter","message":"m","innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_results":{"jailbreak":{"filtered":true,"detected":true}}}}}}}`,
			batchfile.Result{CustomID: "d", Outcome: batchfile.Refused, RefusedBy: batchfile.RefusedPrompt, Categories: []string{"jailbreak"}, StatusCode: 400, Code: "content_filter", Message: "m"}},
		{"prompt filtered, spec spelling", `{"custom_id":"e","response":{"status_code":400,"body":{"error":{"code":"content_filter","message":"m","inner_error":{"code":"ResponsibleAIPolicyViolation","content_filter_results":{"hate":{"filtered":true}}}}}}}`,
			batchfile.Result{CustomID: "e", Outcome: batchfile.Refused, RefusedBy: batchfile.RefusedPrompt, Categories: []string{"hate"}, StatusCode: 400, Code: "content_filter", Message: "m"}},
		{"prompt filtered as top-level error", `{"custom_id":"f","response":null,"error":{"code":"content_filter","message":"filtered"}}`,
			batchfile.Result{CustomID: "f", Outcome: batchfile.Refused, RefusedBy: batchfile.RefusedPrompt, Code: "content_filter", Message: "filtered"}},
		{"top-level error", `{"custom_id":"g","response":null,"error":{"code":"batch_expired","message":"This request could not be executed before the completion window expired."}}`,
			batchfile.Result{CustomID: "g", Outcome: batchfile.Failed, Code: "batch_expired", Message: "This request could not be executed before the completion window expired."}},
		{"non-200 response", `{"custom_id":"h","response":{"status_code":500,"request_id":"r","body":{"error":{"code":"InternalServerError","message":"oops"}}},"error":null}`,
			batchfile.Result{CustomID: "h", Outcome: batchfile.Failed, StatusCode: 500, RequestID: "r", Code: "InternalServerError", Message: "oops"}},
		{"429 with numeric code", `{"custom_id":"i","response":{"status_code":429,"body":{"error":{"code":429,"message":"slow down"}}}}`,
			batchfile.Result{CustomID: "i", Outcome: batchfile.Failed, StatusCode: 429, Code: "429", Message: "slow down"}},
		{"non-200 without body", `{"custom_id":"j","response":{"status_code":503,"body":null}}`,
			batchfile.Result{CustomID: "j", Outcome: batchfile.Failed, StatusCode: 503}},
		{"responses api", `{"custom_id":"k","response":{"status_code":200,"body":{"object":"response","created_at":1762445017.0,"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"Hi "},{"type":"output_text","text":"there"}]}],"usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":2},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":13}}}}`,
			batchfile.Result{CustomID: "k", Outcome: batchfile.OK, StatusCode: 200, FinishReason: "completed", Text: "Hi there", Usage: ledger.Usage{PromptTokens: 9, CompletionTokens: 4, CachedTokens: 2, ReasoningTokens: 1}}},
		{"responses api, completion filtered", `{"id":"batch_req_7","custom_id":"m","response":{"status_code":200,"request_id":"4d7f…","body":{"id":"resp_68f1","object":"response","created_at":1762445017.0,"status":"incomplete","incomplete_details":{"reason":"content_filter"},"model":"gpt-4.1-mini-batch","output":[{"id":"msg_1","type":"message","status":"incomplete","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"Partial"}]}],"content_filters":[{"blocked":false,"source_type":"prompt","content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}},{"blocked":true,"source_type":"completion","content_filter_results":{"violence":{"filtered":true,"severity":"high"},"self_harm":{"filtered":true,"severity":"medium"},"sexual":{"filtered":false,"severity":"safe"}}}],"usage":{"input_tokens":31,"input_tokens_details":{"cached_tokens":0},"output_tokens":12,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":43}}},"error":null}`,
			batchfile.Result{CustomID: "m", Outcome: batchfile.Refused, RefusedBy: batchfile.RefusedCompletion, Categories: []string{"self_harm", "violence"}, StatusCode: 200, RequestID: "4d7f…", FinishReason: "content_filter", Text: "Partial",
				Usage: ledger.Usage{PromptTokens: 31, CompletionTokens: 12}}},
		{"responses api, completion filtered, nothing written, no annotations", `{"custom_id":"n","response":{"status_code":200,"body":{"object":"response","status":"incomplete","incomplete_details":{"reason":"content_filter"},"output":[],"usage":{"input_tokens":8,"output_tokens":3,"total_tokens":11}}}}`,
			batchfile.Result{CustomID: "n", Outcome: batchfile.Refused, RefusedBy: batchfile.RefusedCompletion, StatusCode: 200, FinishReason: "content_filter",
				Usage: ledger.Usage{PromptTokens: 8, CompletionTokens: 3}}},
		{"responses api, cut at max_output_tokens", `{"custom_id":"o","response":{"status_code":200,"body":{"object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","content":[{"type":"output_text","text":"Long answ"}]}],"usage":{"input_tokens":8,"output_tokens":16,"total_tokens":24}}}}`,
			batchfile.Result{CustomID: "o", Outcome: batchfile.OK, StatusCode: 200, FinishReason: "max_output_tokens", Text: "Long answ",
				Usage: ledger.Usage{PromptTokens: 8, CompletionTokens: 16}}},
		{"responses api, odd annotation shapes", `{"custom_id":"p","response":{"status_code":200,"body":{"object":"response","status":"incomplete","incomplete_details":"content_filter","content_filters":{"unexpected":true},"output":[],"usage":{"input_tokens":2,"output_tokens":0,"total_tokens":2}}}}`,
			batchfile.Result{CustomID: "p", Outcome: batchfile.Refused, RefusedBy: batchfile.RefusedCompletion, StatusCode: 200, FinishReason: "content_filter",
				Usage: ledger.Usage{PromptTokens: 2}}},
		{"responses api, incomplete without details", `{"custom_id":"r","response":{"status_code":200,"body":{"object":"response","status":"incomplete","incomplete_details":[1],"output":[],"usage":{"input_tokens":2,"output_tokens":1,"total_tokens":3}}}}`,
			batchfile.Result{CustomID: "r", Outcome: batchfile.OK, StatusCode: 200, FinishReason: "incomplete",
				Usage: ledger.Usage{PromptTokens: 2, CompletionTokens: 1}}},
		{"responses api, prompt filtered", `{"custom_id":"q","response":{"status_code":400,"body":{"error":{"code":"content_filter","message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","param":"prompt","type":null,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true,"severity":"high"}}}}}}}`,
			batchfile.Result{CustomID: "q", Outcome: batchfile.Refused, RefusedBy: batchfile.RefusedPrompt, Categories: []string{"hate"}, StatusCode: 400, Code: "content_filter",
				Message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy."}},
		{"CRLF line ending", `{"custom_id":"l","error":{"code":"x","message":"y"}}` + "\r",
			batchfile.Result{CustomID: "l", Outcome: batchfile.Failed, Code: "x", Message: "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := batchfile.NewReader(strings.NewReader(tt.line+"\n"), 0)
			got, err := r.Next()
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			tt.want.Line = 1
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Next() =\n%+v\nwant\n%+v", got, tt.want)
			}
			if _, err := r.Next(); !errors.Is(err, io.EOF) {
				t.Errorf("second Next error = %v, want io.EOF", err)
			}
		})
	}
}

func TestParse_MalformedLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, line, wantCustomID string
	}{
		{"not json", `not json at all`, ""},
		{"array", `[1,2,3]`, ""},
		{"truncated", `{"custom_id":"a","response":{"status_code":200`, ""},
		{"no custom_id", `{"response":{"status_code":200,"body":{}}}`, ""},
		{"numeric custom_id", `{"custom_id":42,"error":{"code":"x"}}`, ""},
		{"empty custom_id", `{"custom_id":"","error":{"code":"x"}}`, ""},
		{"neither response nor error", `{"custom_id":"a","response":null,"error":null}`, "a"},
		{"no status code", `{"custom_id":"a","response":{"body":{}}}`, "a"},
		{"string status code", `{"custom_id":"a","response":{"status_code":"200","body":{}}}`, "a"},
		{"body not an object", `{"custom_id":"a","response":{"status_code":200,"body":"text"}}`, "a"},
		{"fractional usage", `{"custom_id":"a","response":{"status_code":200,"body":{"usage":{"prompt_tokens":1.5}}}}`, "a"},
		{"negative usage", `{"custom_id":"a","response":{"status_code":200,"body":{"usage":{"completion_tokens":-3}}}}`, "a"},
		{"usage overflow", `{"custom_id":"a","response":{"status_code":200,"body":{"usage":{"prompt_tokens":99999999999999999999}}}}`, "a"},
		{"trailing garbage", `{"custom_id":"a","error":{"code":"x"}} trailing`, "a"},
		{"content not a string", `{"custom_id":"a","response":{"status_code":200,"body":{"choices":[{"message":{"content":{"x":1}}}]}}}`, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := batchfile.NewReader(strings.NewReader(tt.line), 0).Next()
			var le *batchfile.LineError
			if !errors.As(err, &le) || !errors.Is(err, batchfile.ErrMalformedLine) {
				t.Fatalf("Next error = %v, want a *LineError", err)
			}
			if le.CustomID != tt.wantCustomID || le.Line != 1 {
				t.Errorf("LineError = %+v, want custom_id %q on line 1", le, tt.wantCustomID)
			}
			if strings.Contains(le.Error(), "trailing") && tt.name != "trailing garbage" {
				t.Errorf("error quotes line content: %v", le)
			}
		})
	}
}

func TestReader_GoesOnAfterBadLines(t *testing.T) {
	t.Parallel()
	input := okLine + "\n\n" + "garbage\n" + `{"custom_id":"` + strings.Repeat("x", 300) + `"}` + "\n" + okLine // no final newline
	r := batchfile.NewReader(strings.NewReader(input), 200)
	var outcomes []string
	for {
		res, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var le *batchfile.LineError
		switch {
		case errors.As(err, &le):
			outcomes = append(outcomes, "bad@"+string(rune('0'+le.Line)))
		case err != nil:
			t.Fatalf("Next: %v", err)
		default:
			outcomes = append(outcomes, res.Outcome.String()+"@"+string(rune('0'+res.Line)))
		}
	}
	// okLine is longer than 200 bytes too: a limit is a limit.
	want := []string{"bad@1", "bad@3", "bad@4", "bad@5"}
	if !reflect.DeepEqual(outcomes, want) {
		t.Errorf("outcomes = %v, want %v", outcomes, want)
	}
	r = batchfile.NewReader(strings.NewReader(input), 0)
	var got []string
	for {
		res, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			got = append(got, res.Outcome.String())
		}
	}
	if !reflect.DeepEqual(got, []string{"ok", "ok"}) {
		t.Errorf("results without a tight limit = %v, want [ok ok]", got)
	}
}

type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		f.n++
		return copy(p, okLine+"\n"+`{"custom_id":"x",`), nil
	}
	return 0, errors.New("connection reset")
}

func TestReader_StreamErrorIsNotALineError(t *testing.T) {
	t.Parallel()
	r := batchfile.NewReader(&failingReader{}, 0)
	if _, err := r.Next(); err != nil {
		t.Fatalf("first Next: %v", err)
	}
	_, err := r.Next()
	if err == nil || errors.Is(err, batchfile.ErrMalformedLine) || errors.Is(err, io.EOF) {
		t.Errorf("Next after a read failure = %v, want the stream error", err)
	}
}

// FuzzReader: no line makes the reader panic, results always carry a
// custom_id and a known outcome, and usage is never negative.
func FuzzReader(f *testing.F) {
	f.Add(okLine)
	f.Add(`{"custom_id":"c","response":{"status_code":400,"body":{"error":{"code":"content_filter","innererror":{"content_filter_result":{"v":{"filtered":true}}}}}}}`)
	f.Add(`{"custom_id":"g","response":null,"error":{"code":"batch_expired","message":"m"}}`)
	f.Add(`{"custom_id":"k","response":{"status_code":200,"body":{"output":[{"content":[{"type":"output_text","text":"x"}]}],"usage":{"input_tokens":1}}}}`)
	f.Add("\xef\xbb\xbf{}\n\r\n{\"custom_id\":\"\\u0000\"}")
	f.Fuzz(func(t *testing.T, data string) {
		r := batchfile.NewReader(strings.NewReader(data), 1<<12)
		for range 10_000 {
			res, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if !errors.Is(err, batchfile.ErrMalformedLine) {
					t.Fatalf("non-line error from an in-memory reader: %v", err)
				}
				continue
			}
			if res.CustomID == "" || res.Outcome < batchfile.OK || res.Outcome > batchfile.Failed {
				t.Fatalf("result without custom_id or outcome: %+v", res)
			}
			u := res.Usage
			if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.CachedTokens < 0 || u.ReasoningTokens < 0 {
				t.Fatalf("negative usage: %+v", u)
			}
		}
		t.Fatal("reader did not reach EOF")
	})
}
