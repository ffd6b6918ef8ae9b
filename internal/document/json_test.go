package document_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ledger"
)

// storedBefore is a status as statuses were stored while their usage was
// a type of this package: tokens, model calls and how they went in one
// object.
const storedBefore = `{"tenant":"contoso","name":"contoso/kb/a.md","etag":"0x8DB","size":42,"state":"done",` +
	`"deliveries":2,"finished":"2026-03-14T09:30:00Z","chunks":3,"result":"contoso/kb/a.md.jsonl",` +
	`"usage":{"prompt_tokens":120,"completion_tokens":40,"cached_tokens":16,"requests":2,"attempts":5,"throttled":3,"waited_ms":2500}}`

func TestStatus_ReadsWhatWasStoredBefore(t *testing.T) {
	var st document.Status
	if err := json.Unmarshal([]byte(storedBefore), &st); err != nil {
		t.Fatal(err)
	}
	wantUsage := ledger.Usage{PromptTokens: 120, CompletionTokens: 40, CachedTokens: 16, Requests: 2}
	wantCalls := document.Calls{Attempts: 5, Throttled: 3, Waited: 2500 * time.Millisecond}
	if st.Usage != wantUsage || st.Calls != wantCalls {
		t.Errorf("usage %+v, calls %+v; want %+v, %+v", st.Usage, st.Calls, wantUsage, wantCalls)
	}
	if st.Tenant != "contoso" || st.ETag != "0x8DB" || st.State != document.Done || st.Deliveries != 2 || st.Chunks != 3 ||
		!st.Finished.Equal(time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)) {
		t.Errorf("status %+v: a field was not read", st)
	}

	// Written again, it is the same JSON: nothing a reader of the old
	// shape knows has moved.
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(storedBefore), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("written again:\n%s\nwant the same as\n%s", b, storedBefore)
	}
}

func TestStatus_JSONRoundTrip(t *testing.T) {
	st := document.Status{Tenant: "contoso", Name: "contoso/kb/b.pdf", State: document.Refused, Version: "W/1",
		Usage: ledger.Usage{PromptTokens: 900, CompletionTokens: 12, CachedTokens: 100, ReasoningTokens: 7, Requests: 3, Refusals: 1, Cost: 42_000},
		Calls: document.Calls{Attempts: 4, Throttled: 1, Waited: 1500 * time.Millisecond}}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var got document.Status
	got.Version = "W/1" // not in the JSON: decoding leaves it as it was
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, st) {
		t.Errorf("round trip:\n%+v\nwant\n%+v\n(JSON %s)", got, st, b)
	}
}
