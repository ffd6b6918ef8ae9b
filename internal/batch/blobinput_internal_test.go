package batch

import (
	"bytes"
	stdjson "encoding/json"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json"
)

// TestItemOptions_DecodeAsEncodingJSON: an input line is an item, or
// refused, exactly as encoding/json's Decoder with DisallowUnknownFields
// had it.
func TestItemOptions_DecodeAsEncodingJSON(t *testing.T) {
	for _, line := range []string{
		`{"id":"a","prompt":"p","max_tokens":5}`,
		`{"id":"a","messages":[{"role":"user","content":"c"}],"temperature":0.5,"max_completion_tokens":9}`,
		`{"ID":"a","Prompt":"p"}`,
		`{"i_d":"a"}`,
		`{"id":"a","id":"b"}`,
		`{"id":"a","extra":1}`,
		`{"id":"a"} {"id":"b"}`,
		`{"id":"a"}x`,
		`{"id":"a","max_tokens":1.5}`,
		`{"id":"a","max_tokens":"5"}`,
		`{"id":null,"prompt":null,"messages":null}`,
		`null`,
		`[]`,
		`{"id":"a",}`,
		"{\"id\":\"\xff\"}",
		`{"id":"\ud800"}`,
		`{"id":"a","messages":[{"role":"user","content":"c","name":"x"}]}`,
	} {
		var want Item
		dec := stdjson.NewDecoder(bytes.NewReader([]byte(line)))
		dec.DisallowUnknownFields()
		wantErr := dec.Decode(&want)
		if wantErr == nil && dec.More() {
			wantErr = stdjson.Unmarshal([]byte("x"), &want)
		}
		var got Item
		gotErr := json.Unmarshal([]byte(line), &got, itemOptions)
		if (gotErr == nil) != (wantErr == nil) || (gotErr == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("%q: %+v, %v; encoding/json: %+v, %v", line, got, gotErr, want, wantErr)
		}
	}
}
