package tickets

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 5<<20)
	tests := []struct {
		name   string
		doc    string
		wantID string // on success and on a skip with a valid id
		reason string // substring of the skip reason; "" for success
	}{
		{"minimal", `{"id":"T-1","body":"printer on fire"}`, "T-1", ""},
		{"all fields", `{"id":"T-2","subject":"Login","body":"b","customer":"ACME","created_at":"2026-03-14T09:30:00+01:00"}`, "T-2", ""},
		{"byte-order mark", "\uFEFF" + `{"id":"T-3","body":"b"}`, "T-3", ""},
		{"nulls are absent", `{"id":"T-4","body":"b","subject":null,"customer":null,"created_at":null}`, "T-4", ""},
		{"hostile text is only text", `{"id":"T-5","subject":"<script>alert(1)</script>","body":"**x** [y](javascript:z)"}`, "T-5", ""},
		{"body at the limit", `{"id":"T-6","body":"` + strings.Repeat("y", MaxBodyBytes) + `"}`, "T-6", ""},
		{"bad JSON", `{"id":"T-7","body":`, "", "malformed JSON"},
		{"trailing garbage", `{"id":"T-8","body":"b"} x`, "", "malformed JSON"},
		{"empty", ``, "", "malformed JSON"},
		{"array", `[{"id":"T-9","body":"b"}]`, "", "not a JSON object"},
		{"null document", `null`, "", "not a JSON object"},
		{"missing id", `{"body":"b"}`, "", "missing id"},
		{"id key is case-sensitive", `{"ID":"T-10","body":"b"}`, "", "missing id"},
		{"null id", `{"id":null,"body":"b"}`, "", "missing id"},
		{"numeric id", `{"id":1042,"body":"b"}`, "", "id is not a string"},
		{"id with a slash", `{"id":"a/b","body":"b"}`, "", "invalid id"},
		{"id starting with a dot", `{"id":".hidden","body":"b"}`, "", "invalid id"},
		{"id too long", `{"id":"` + strings.Repeat("a", MaxIDBytes+1) + `","body":"b"}`, "", "invalid id"},
		{"id with a control character", `{"id":"a\u0000b","body":"b"}`, "", "invalid id"},
		{"missing body", `{"id":"T-11"}`, "T-11", "missing body"},
		{"blank body", `{"id":"T-12","body":" \n\t"}`, "T-12", "blank body"},
		{"numeric body", `{"id":"T-13","body":7}`, "T-13", "body is not a string"},
		{"5 MB body", `{"id":"T-14","body":"` + big + `"}`, "T-14", "body too large (5.0 MiB of JSON; limit 256 KiB)"},
		{"body over the limit", `{"id":"T-15","body":"` + strings.Repeat("z", MaxBodyBytes+1) + `"}`, "T-15", "body too large (256.0 KiB; limit 256 KiB)"},
		{"subject too long", `{"id":"T-16","body":"b","subject":"` + strings.Repeat("s", MaxSubjectBytes+1) + `"}`, "T-16", "subject too long"},
		{"numeric subject", `{"id":"T-17","body":"b","subject":3}`, "T-17", "subject is not a string"},
		{"customer too long", `{"id":"T-18","body":"b","customer":"` + strings.Repeat("c", MaxCustomerBytes+1) + `"}`, "T-18", "customer too long"},
		{"customer object", `{"id":"T-19","body":"b","customer":{"name":"x"}}`, "T-19", "customer is not a string"},
		{"bad time", `{"id":"T-20","body":"b","created_at":"yesterday"}`, "T-20", "created_at is not an RFC 3339 time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, id, reason := parse([]byte(tt.doc))
			if tt.reason == "" {
				if reason != "" {
					t.Fatalf("parse = skip %q, want a ticket", reason)
				}
				if got.ID != tt.wantID || got.Hash != Hash(got.Subject, got.Body) {
					t.Errorf("parse = id %q hash %q, want id %q and Hash(subject, body)", got.ID, got.Hash, tt.wantID)
				}
				return
			}
			if !strings.Contains(reason, tt.reason) || id != tt.wantID {
				t.Errorf("parse = (id %q, reason %q), want (id %q, reason containing %q)", id, reason, tt.wantID, tt.reason)
			}
			if len(reason) > 200 {
				t.Errorf("reason is %d bytes long; it must not quote the document", len(reason))
			}
		})
	}
}

func TestParse_KeepsUnknownFieldsAndRoundTrips(t *testing.T) {
	t.Parallel()
	doc := `{"id":"T-1","subject":"S","body":"B","customer":"C","created_at":"2026-03-14T09:30:00.5Z",` +
		`"priority":"high","tags":["a","b"],"custom":{"sla":{"hours":4}},"n":1.50}`
	got, _, reason := parse([]byte(doc))
	if reason != "" {
		t.Fatalf("parse: %s", reason)
	}
	wantExtra := map[string]string{"priority": `"high"`, "tags": `["a","b"]`, "custom": `{"sla":{"hours":4}}`, "n": `1.50`}
	if len(got.Extra) != len(wantExtra) {
		t.Errorf("Extra has %d fields, want %d: %v", len(got.Extra), len(wantExtra), got.Extra)
	}
	for k, v := range wantExtra {
		if string(got.Extra[k]) != v {
			t.Errorf("Extra[%q] = %s, want %s", k, got.Extra[k], v)
		}
	}
	if want := time.Date(2026, 3, 14, 9, 30, 0, 5e8, time.UTC); !got.Created.Equal(want) {
		t.Errorf("Created = %v, want %v", got.Created, want)
	}
	out, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	again, _, reason := parse(out)
	if reason != "" {
		t.Fatalf("parse(Marshal(t)): %s", reason)
	}
	if !reflect.DeepEqual(again, got) {
		t.Errorf("round trip:\n got %+v\nwant %+v", again, got)
	}
}

func TestHash(t *testing.T) {
	t.Parallel()
	base := Hash("Login fails", "Since Monday.")
	tests := []struct {
		name    string
		hash    string
		changed bool
	}{
		{"same text", Hash("Login fails", "Since Monday."), false},
		{"subject edited", Hash("Login fails!", "Since Monday."), true},
		{"body edited", Hash("Login fails", "Since Tuesday."), true},
		{"text moved between fields", Hash("Login fails Since", " Monday."), true},
		{"subject removed", Hash("", "Since Monday."), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if (tt.hash != base) != tt.changed {
				t.Errorf("hash %s vs %s: changed = %v, want %v", tt.hash, base, tt.hash != base, tt.changed)
			}
			if len(tt.hash) != 64 {
				t.Errorf("len(hash) = %d, want 64 hex digits", len(tt.hash))
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"id":"T-1","body":"b","x":[1,{"y":null}]}`))
	f.Add([]byte(`{"id":"T-2","subject":"\u003cscript\u003e","body":"\ud800"}`))
	f.Add([]byte(`{"id":"a","body":"b","created_at":"2026-01-02T03:04:05Z","customer":"c"}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, _, reason := parse(doc)
		if reason != "" {
			return
		}
		if !validID(got.ID) || len(got.Body) > MaxBodyBytes || strings.TrimSpace(got.Body) == "" ||
			len(got.Subject) > MaxSubjectBytes || len(got.Customer) > MaxCustomerBytes || got.Hash != Hash(got.Subject, got.Body) {
			t.Fatalf("parse accepted a ticket that breaks the schema: %+v", got)
		}
		out, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		again, _, reason := parse(out)
		if reason != "" || again.ID != got.ID || again.Body != got.Body || again.Subject != got.Subject || again.Hash != got.Hash {
			t.Fatalf("round trip: %q → %+v (%s)", out, again, reason)
		}
	})
}
