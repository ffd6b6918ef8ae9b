package claimcheck_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/outcome"
)

const account = "https://acct.blob.core.windows.net"

func newRules(t testing.TB, p claimcheck.Policy) *claimcheck.Rules {
	t.Helper()
	if p.AccountURL == "" {
		p.AccountURL = account
	}
	r, err := claimcheck.NewRules(p)
	if err != nil {
		t.Fatalf("NewRules: %v", err)
	}
	return r
}

func validMessage() claimcheck.Message {
	return claimcheck.Message{
		Version:       claimcheck.Version,
		BlobURL:       account + "/incoming/acme/reports/q1.txt",
		ETag:          "0x8DB1234567890AB",
		Size:          1234,
		ContentType:   "text/plain; charset=utf-8",
		Tenant:        "acme",
		ModelAlias:    "gpt-4o-mini",
		CorrelationID: "6f1c2d9e-3b1a-4c55-9f0e-1a2b3c4d5e6f",
	}
}

func TestRules_EncodeDecode_RoundTrip(t *testing.T) {
	t.Parallel()
	r := newRules(t, claimcheck.Policy{})
	m := validMessage()
	data, err := r.Encode(m)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	got, err := r.Decode(data)
	if err != nil {
		t.Fatalf("Decode(%s): %v", data, err)
	}
	if got != m {
		t.Errorf("Decode(Encode(m)) = %+v, want %+v", got, m)
	}
	if !strings.Contains(string(data), `"version":1`) {
		t.Errorf("Encode = %s, want a version field", data)
	}
}

func TestRules_Decode_Strict(t *testing.T) {
	t.Parallel()
	r := newRules(t, claimcheck.Policy{})
	good, err := r.Encode(validMessage())
	if err != nil {
		t.Fatal(err)
	}
	body := strings.TrimSuffix(strings.TrimPrefix(string(good), "{"), "}")
	tests := []struct {
		name string
		data string
	}{
		{"empty", ``},
		{"not an object", `[1,2]`},
		{"null", `null`},
		{"unknown field", `{` + body + `,"document":"the whole text"}`},
		{"duplicate field", `{` + body + `,"tenant":"other"}`},
		{"miscased field", strings.Replace(string(good), `"tenant"`, `"Tenant"`, 1)},
		{"nested value", strings.Replace(string(good), `"size":1234`, `"size":{"n":1234}`, 1)},
		{"trailing data", string(good) + `{}`},
		{"trailing garbage", string(good) + `x`},
		{"wrong version", strings.Replace(string(good), `"version":1`, `"version":2`, 1)},
		{"missing version", strings.Replace(string(good), `"version":1,`, ``, 1)},
		{"string size", strings.Replace(string(good), `"size":1234`, `"size":"1234"`, 1)},
		{"oversized", `{"version":1,"tenant":"` + strings.Repeat("a", claimcheck.MaxEncodedBytes) + `"}`},
		{"tenant mismatch", strings.Replace(string(good), `"tenant":"acme"`, `"tenant":"other"`, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := r.Decode([]byte(tt.data))
			if got := outcome.Of(err); got != outcome.Rejected {
				t.Errorf("Decode(%.80s) = %v (%v), want rejected", tt.data, got, err)
			}
		})
	}
}

func TestRules_Validate(t *testing.T) {
	t.Parallel()
	r := newRules(t, claimcheck.Policy{})
	tests := []struct {
		name   string
		change func(*claimcheck.Message)
		ok     bool
	}{
		{"valid", func(*claimcheck.Message) {}, true},
		{"no content type", func(m *claimcheck.Message) { m.ContentType = "" }, true},
		{"quoted etag", func(m *claimcheck.Message) { m.ETag = `"0x8DB"` }, true},
		{"escaped slash in url", func(m *claimcheck.Message) { m.BlobURL = account + "/incoming/acme%2Freports%2Fq1.txt" }, true},
		{"escaped space", func(m *claimcheck.Message) { m.BlobURL = account + "/incoming/acme/q%201.txt" }, true},
		{"uppercase host", func(m *claimcheck.Message) { m.BlobURL = "https://ACCT.blob.core.windows.net/incoming/acme/q1.txt" }, true},
		{"other tenant's folder", func(m *claimcheck.Message) { m.BlobURL = account + "/incoming/globex/q1.txt" }, false},
		{"bad tenant", func(m *claimcheck.Message) { m.Tenant = "Acme" }, false},
		{"zero size", func(m *claimcheck.Message) { m.Size = 0 }, false},
		{"negative size", func(m *claimcheck.Message) { m.Size = -1 }, false},
		{"too large", func(m *claimcheck.Message) { m.Size = claimcheck.DefaultMaxDocument + 1 }, false},
		{"no etag", func(m *claimcheck.Message) { m.ETag = "" }, false},
		{"etag with newline", func(m *claimcheck.Message) { m.ETag = "0x8\nDB" }, false},
		{"bad content type", func(m *claimcheck.Message) { m.ContentType = "text/plain; charset" }, false},
		{"no model alias", func(m *claimcheck.Message) { m.ModelAlias = "" }, false},
		{"model alias with slash", func(m *claimcheck.Message) { m.ModelAlias = "../gpt" }, false},
		{"no correlation id", func(m *claimcheck.Message) { m.CorrelationID = "" }, false},
		{"correlation id of text", func(m *claimcheck.Message) { m.CorrelationID = "Zürich–Δ-0042 (batch 7/9)" }, true},
		{"correlation id of 128 characters", func(m *claimcheck.Message) { m.CorrelationID = strings.Repeat("Δ", 128) }, true},
		{"long correlation id", func(m *claimcheck.Message) { m.CorrelationID = strings.Repeat("a", 129) }, false},
		{"correlation id with a newline", func(m *claimcheck.Message) { m.CorrelationID = "a\nb" }, false},
		{"correlation id with a bidi override", func(m *claimcheck.Message) { m.CorrelationID = "a\u202eb" }, false},
		{"correlation id with a zero-width space", func(m *claimcheck.Message) { m.CorrelationID = "a\u200bb" }, false},
		{"correlation id not UTF-8", func(m *claimcheck.Message) { m.CorrelationID = "a\xffb" }, false},
		{"blank correlation id", func(m *claimcheck.Message) { m.CorrelationID = "   " }, false},
		{"version zero", func(m *claimcheck.Message) { m.Version = 0 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := validMessage()
			tt.change(&m)
			err := r.Validate(m)
			if (err == nil) != tt.ok {
				t.Fatalf("Validate(%+v) = %v, want ok %v", m, err, tt.ok)
			}
			if err != nil && outcome.Of(err) != outcome.Rejected {
				t.Errorf("Validate error kind = %v, want rejected", outcome.Of(err))
			}
		})
	}
}

func TestRules_ParseURL_Hostile(t *testing.T) {
	t.Parallel()
	r := newRules(t, claimcheck.Policy{})
	tests := []struct {
		name string
		url  string
	}{
		{"other account", "https://evil.blob.core.windows.net/incoming/acme/q1.txt"},
		{"account as subdomain", "https://acct.blob.core.windows.net.evil.com/incoming/acme/q1.txt"},
		{"http downgrade", "http://acct.blob.core.windows.net/incoming/acme/q1.txt"},
		{"other port", "https://acct.blob.core.windows.net:444/incoming/acme/q1.txt"},
		{"other container", "https://acct.blob.core.windows.net/results/acme/q1.txt"},
		{"container prefix", "https://acct.blob.core.windows.net/incomingx/acme/q1.txt"},
		{"traversal", account + "/incoming/acme/../globex/q1.txt"},
		{"traversal out of container", account + "/incoming/../results/acme/q1.txt"},
		{"encoded traversal", account + "/incoming/acme/%2e%2e/globex/q1.txt"},
		{"encoded traversal uppercase", account + "/incoming/acme/%2E%2E/q1.txt"},
		{"double-encoded traversal", account + "/incoming/acme/%252e%252e/q1.txt"},
		{"encoded slash traversal", account + "/incoming/acme%2F..%2Fglobex%2Fq1.txt"},
		{"dot segment", account + "/incoming/acme/./q1.txt"},
		{"empty segment", account + "/incoming/acme//q1.txt"},
		{"leading slash", account + "/incoming//acme/q1.txt"},
		{"query (SAS)", account + "/incoming/acme/q1.txt?sv=2024&sig=abc"},
		{"empty query", account + "/incoming/acme/q1.txt?"},
		{"fragment", account + "/incoming/acme/q1.txt#x"},
		{"credentials", "https://user:pw@acct.blob.core.windows.net/incoming/acme/q1.txt"},
		{"encoded NUL", account + "/incoming/acme/q%001.txt"},
		{"encoded newline", account + "/incoming/acme/q%0A1.txt"},
		{"raw control", account + "/incoming/acme/q\x011.txt"},
		{"raw space", account + "/incoming/acme/q 1.txt"},
		{"raw non-ASCII", account + "/incoming/acme/é.txt"},
		{"encoded invalid UTF-8", account + "/incoming/acme/%ff.txt"},
		{"encoded bidi override", account + "/incoming/acme/%E2%80%AEtxt.exe"},
		{"encoded backslash", account + "/incoming/acme/..%5Cq1.txt"},
		{"bad escape", account + "/incoming/acme/q%zz.txt"},
		{"unsupported extension", account + "/incoming/acme/q1.exe"},
		{"no extension", account + "/incoming/acme/README"},
		{"tenant only", account + "/incoming/acme.txt"},
		{"trailing slash", account + "/incoming/acme/q1.txt/"},
		{"not a URL", "::::"},
		{"empty", ""},
		{"javascript", "javascript:alert(1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if b, err := r.ParseURL(tt.url); err == nil {
				t.Errorf("ParseURL(%q) = %+v, want an error", tt.url, b)
			}
		})
	}
}

func TestRules_Route(t *testing.T) {
	t.Parallel()
	r := newRules(t, claimcheck.Policy{HeavyThreshold: 1000, LightQueue: "light", HeavyQueue: "heavy"})
	tests := []struct {
		size int64
		want string
	}{
		{1, "light"}, {999, "light"}, {1000, "heavy"}, {1 << 30, "heavy"},
	}
	for _, tt := range tests {
		m := validMessage()
		m.Size = tt.size
		if got := r.Route(m); got != tt.want {
			t.Errorf("Route(size %d) = %q, want %q", tt.size, got, tt.want)
		}
	}
	d := newRules(t, claimcheck.Policy{})
	m := validMessage()
	if got := d.Route(m); got != claimcheck.DefaultLightQueue {
		t.Errorf("default Route(small) = %q, want %q", got, claimcheck.DefaultLightQueue)
	}
	m.Size = claimcheck.DefaultHeavyThreshold
	if got := d.Route(m); got != claimcheck.DefaultHeavyQueue {
		t.Errorf("default Route(heavy) = %q, want %q", got, claimcheck.DefaultHeavyQueue)
	}
}

// TestRules_Encode_WorstCaseFits builds the largest message Validate accepts
// and checks it encodes under MaxEncodedBytes, which sits far below what
// Service Bus takes.
func TestRules_Encode_WorstCaseFits(t *testing.T) {
	t.Parallel()
	if claimcheck.MaxEncodedBytes > (claimcheck.ServiceBusMaxMessageBytes-claimcheck.ServiceBusMaxHeaderBytes)/8 {
		t.Errorf("MaxEncodedBytes %d is not far below Service Bus's %d", claimcheck.MaxEncodedBytes, claimcheck.ServiceBusMaxMessageBytes)
	}
	longAccount := "https://" + strings.Repeat("a", 256-len("https://")-len(".blob.core.windows.net")) + ".blob.core.windows.net"
	r := newRules(t, claimcheck.Policy{AccountURL: longAccount})
	tenant := "t" + strings.Repeat("x", 62)
	file := strings.Repeat("%", claimcheck.MaxNameBytes-len(tenant)-1-len(".json")) + ".json" // every byte escapes to three
	name, err := r.ParseName(tenant + "/" + file)
	if err != nil {
		t.Fatalf("ParseName: %v", err)
	}
	m := claimcheck.Message{
		BlobURL: r.BlobURL(name), ETag: strings.Repeat("E", 128), Size: 1,
		ContentType: "application/json; charset=" + strings.Repeat("u", 128-len("application/json; charset=")),
		Tenant:      tenant, ModelAlias: strings.Repeat("m", 64), CorrelationID: "c" + strings.Repeat("\u2028", 127), // escaped to six bytes each
	}
	data, err := r.Encode(m)
	if err != nil {
		t.Fatalf("Encode(worst case): %v", err)
	}
	t.Logf("worst-case claim check: %d bytes (limit %d)", len(data), claimcheck.MaxEncodedBytes)
	if _, err := r.Decode(data); err != nil {
		t.Errorf("Decode(worst case): %v", err)
	}
}

func TestNewRules_Policy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    claimcheck.Policy
		ok   bool
	}{
		{"https", claimcheck.Policy{AccountURL: account}, true},
		{"azurite path style", claimcheck.Policy{AccountURL: "http://127.0.0.1:10000/devstoreaccount1"}, true},
		{"localhost", claimcheck.Policy{AccountURL: "http://localhost:10000/devstoreaccount1"}, true},
		{"missing", claimcheck.Policy{}, false},
		{"http off loopback", claimcheck.Policy{AccountURL: "http://acct.blob.core.windows.net"}, false},
		{"query", claimcheck.Policy{AccountURL: account + "?sig=x"}, false},
		{"bad container", claimcheck.Policy{AccountURL: account, Container: "In"}, false},
		{"bad extension", claimcheck.Policy{AccountURL: account, Extensions: []string{"txt"}}, false},
		{"same queues", claimcheck.Policy{AccountURL: account, LightQueue: "q", HeavyQueue: "q"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := claimcheck.NewRules(tt.p)
			if (err == nil) != tt.ok {
				t.Errorf("NewRules(%+v) = %v, want ok %v", tt.p, err, tt.ok)
			}
		})
	}
}

func TestRules_Azurite(t *testing.T) {
	t.Parallel()
	r := newRules(t, claimcheck.Policy{AccountURL: "http://127.0.0.1:10000/devstoreaccount1"})
	name, err := r.ParseName("acme/Q1 report é.md")
	if err != nil {
		t.Fatal(err)
	}
	u := r.BlobURL(name)
	if want := "http://127.0.0.1:10000/devstoreaccount1/incoming/acme/Q1%20report%20%C3%A9.md"; u != want {
		t.Errorf("BlobURL = %q, want %q", u, want)
	}
	back, err := r.ParseURL(u)
	if err != nil || back != name {
		t.Errorf("ParseURL(BlobURL(n)) = %+v, %v; want %+v", back, err, name)
	}
	if _, err := r.ParseURL("http://127.0.0.1:10000/otheraccount/incoming/acme/q.md"); err == nil {
		t.Error("ParseURL accepted another account on the same Azurite")
	}
}

func TestMessage_NoDocumentField(t *testing.T) {
	t.Parallel()
	// A message must never grow a field that could carry the document.
	var fields map[string]any
	data, err := json.Marshal(validMessage())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	if len(fields) != 8 {
		t.Errorf("Message has %d JSON fields, want 8: %v", len(fields), fields)
	}
	var oe *outcome.Error
	r := newRules(t, claimcheck.Policy{})
	if _, err := r.Decode([]byte(`{}`)); !errors.As(err, &oe) || oe.Reason == "" {
		t.Errorf("Decode({}) = %v, want an outcome.Error with a reason", err)
	}
}
