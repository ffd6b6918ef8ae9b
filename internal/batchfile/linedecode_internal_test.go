package batchfile

import (
	"reflect"
	"strings"
	"testing"
)

// azureLine is an output line as Azure writes it for a chat completion.
const azureLine = `{"id":"batch_req_1","custom_id":"j.0.1.AAAAAAAA","response":{"status_code":200,"request_id":"r1","body":{"id":"chatcmpl-1","object":"chat.completion","created":1772352000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_1","choices":[{"index":0,"finish_reason":"stop","logprobs":null,"message":{"role":"assistant","content":"Hello.\n\"Quoted\"","refusal":null,"annotations":[]},"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}],"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"jailbreak":{"filtered":false,"detected":false}}}],"usage":{"prompt_tokens":27,"completion_tokens":24,"total_tokens":51,"prompt_tokens_details":{"audio_tokens":0,"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":5}}}},"error":null}`

// lineCases are lines of every shape the walk handles itself or hands on.
var lineCases = []string{
	azureLine,
	`{"custom_id":"a","response":{"status_code":200,"body":{"choices":[],"usage":null}},"error":null}`,
	`{"custom_id":"b","response":{"status_code":400,"body":{"error":{"code":"content_filter","message":"m","innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true}}}}}}}`,
	`{"custom_id":"g","response":null,"error":{"code":"batch_expired","message":"m"}}`,
	`{"custom_id":"i","response":{"status_code":429,"request_id":7,"body":{"error":{"code":429}}}}`,
	`{"custom_id":"k","response":{"status_code":200,"body":{"status":"incomplete","incomplete_details":{"reason":"content_filter"},"content_filters":[],"output":[{"type":"message","content":[{"type":"output_text","text":"x"}]}],"usage":{"input_tokens":1,"input_tokens_details":{"cached_tokens":1},"output_tokens_details":null}}}}`,
	`{"custom_id":"c","response":{"status_code":200,"body":{"choices":[{"finish_reason":"content_filter","message":{"content":null},"content_filter_results":{"violence":{"filtered":true}}}]}}}`,
	// Names matched only case-insensitively, repeated members, escapes.
	`{"Custom_ID":"u","RESPONSE":{"statusCode":200,"body":{"Choices":[{"message":{"Content":"x"}}]}}}`,
	`{"custom_id":"d","response":{"status_code":200},"response":{"body":{"usage":{"prompt_tokens":1}}}}`,
	`{"custom\u005fid":"e","response":{"status_code":200,"body":{"usage":{"prompt_tokens":1,"prompt_tokens":2}}}}`,
	`{"custom_id":"f","respönse":{"status_code":200}}`,
	// Wrong kinds and broken lines.
	`{"custom_id":"h","response":{"status_code":"200"}}`,
	`{"custom_id":"h","response":{"status_code":1.5}}`,
	`{"custom_id":"h","response":{"status_code":200,"body":{"choices":[null]}}}`,
	`{"custom_id":"h","response":{"status_code":200,"body":{"choices":{}}}}`,
	`{"custom_id":"h","response":{"status_code":200,"body":{"usage":{"prompt_tokens":-1}}}}`,
	`{"custom_id":"h","response":[]}`,
	`{"custom_id":"h"} {}`,
	`{"custom_id":"h",`,
	`null`,
	`[1]`,
	"{\"custom_id\":\"\xff\",\"response\":{\"status_code\":200}}",
}

// TestLineDecoder_AgreesWithTheGeneralDecoder: whatever the walk decodes
// itself, it decodes as the general decoder does, and lines the walk
// hands on are decoded the general way.
func TestLineDecoder_AgreesWithTheGeneralDecoder(t *testing.T) {
	d := newLineDecoder()
	for _, line := range lineCases {
		checkAgree(t, d, line)
	}
	if err := d.walk([]byte(azureLine), &wireLine{}); err != nil {
		t.Errorf("the walk hands Azure's common line on: %v", err)
	}
}

func checkAgree(t *testing.T, d *lineDecoder, line string) {
	t.Helper()
	var want, got wireLine
	wantErr := decode([]byte(line), &want)
	gotErr := d.decodeLine([]byte(line), &got)
	if (wantErr == nil) != (gotErr == nil) || (wantErr == nil && !reflect.DeepEqual(got, want)) {
		t.Errorf("line %q:\nwalk    %+v, %v\ngeneral %+v, %v", line, got, gotErr, want, wantErr)
	}
}

func FuzzLineDecoder(f *testing.F) {
	for _, l := range lineCases {
		f.Add(l)
	}
	d := newLineDecoder()
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsRune(line, '\n') {
			return
		}
		checkAgree(t, d, line)
	})
}
