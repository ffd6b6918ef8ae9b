package devhost

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/invoke"
)

func TestParseReply_HostRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, ct, body string
		status         int
		wantErr        string
		wantLogs       int
	}{
		{"ok", "application/json; charset=utf-8", `{"Outputs":{},"Logs":["a","b"],"ReturnValue":null}`, 200, "", 2},
		{"keys ignore case", "text/json", `{"outputs":{"x":1},"logs":["a"]}`, 200, "", 1},
		{"non-2xx fails", "application/json", `{"error":"x"}`, 500, "handler replied 500", 0},
		{"sniffed text/plain fails", "text/plain; charset=utf-8", `{}`, 200, "UnsupportedMediaTypeException", 0},
		{"empty body hangs the real host", "application/json", ``, 200, "empty or null", 0},
		{"null hangs the real host", "application/json", `null`, 200, "empty or null", 0},
		{"not an object", "application/json", `[1]`, 200, "not a JSON object", 0},
		{"invalid JSON", "application/json", `{"Outputs":`, 200, "not a JSON object", 0},
	}
	for _, tt := range tests {
		r, err := parseReply(tt.status, tt.ct, []byte(tt.body))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(r.Logs) != tt.wantLogs {
			t.Errorf("%s: reply %+v, err %v", tt.name, r, err)
		}
	}
}

func TestOutputItems_HostConversion(t *testing.T) {
	t.Parallel()
	plain, binary := Binding{Type: "serviceBus"}, Binding{Type: "serviceBus", DataType: "binary"}
	tests := []struct {
		name      string
		b         Binding
		raw       string
		collector bool
		want      []string
	}{
		{"base64 string becomes bytes", plain, `"ZG9uZQ=="`, true, []string{"done"}},
		{"a bare word that is valid base64 is garbled", plain, `"done"`, true, []string{"v\x89\xde"}},
		{"dataType binary keeps strings", binary, `"done"`, true, []string{"done"}},
		{"non-base64 text passes", plain, `"hello world"`, true, []string{"hello world"}},
		{"array splits", plain, `["{\"a\":1}","{\"b\":2}"]`, true, []string{`{"a":1}`, `{"b":2}`}},
		{"string holding an array splits", binary, `"[1,2]"`, true, []string{"1", "2"}},
		{"object element is indented", plain, `[{"a":1}]`, true, []string{"{\n  \"a\": 1\n}"}},
		{"non-collector keeps the array", plain, `[1,2]`, false, []string{"[1,2]"}},
		{"null is nothing", plain, `null`, true, nil},
	}
	for _, tt := range tests {
		items := outputItems(tt.b, json.RawMessage(tt.raw), tt.collector)
		var got []string
		for _, it := range items {
			if tt.collector {
				got = append(got, string(it.messageBody()))
			} else {
				got = append(got, string(it.blobBody()))
			}
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("%s: outputItems(%s) = %q, want %q", tt.name, tt.raw, got, tt.want)
		}
	}
}

// TestEnvelope_RoundTrip checks the two sides of the wire against each
// other: what the dev host encodes, the protocol layer decodes.
func TestEnvelope_RoundTrip(t *testing.T) {
	t.Parallel()
	env := newEnvelope("f", time.Date(2025, 3, 1, 12, 0, 1, 5, time.UTC))
	env.Data["message"] = hostString(`{"quote":"a \"b\""}`)
	env.Metadata["DeliveryCount"] = hostNumber(3)
	env.Metadata["MessageId"] = hostString("m-1")
	env.Metadata["EnqueuedTimeUtc"] = hostDateTime(time.Date(2025, 3, 1, 12, 0, 0, 999, time.UTC))
	env.Metadata["ExpiresAt"] = hostDateTimeOffset(time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC))
	env.Metadata["ApplicationProperties"] = mustJSON(map[string]any{"tenant": "contoso"})
	body, _ := json.Marshal(env)
	if !strings.Contains(string(body), `"DeliveryCount":"3"`) || !strings.Contains(string(body), `"MessageId":"\"m-1\""`) ||
		!strings.Contains(string(body), `"EnqueuedTimeUtc":"2025-03-01T12:00:00"`) {
		t.Fatalf("envelope %s does not carry the host's quirks", body)
	}
	var got invoke.ServiceBusMessage
	m := invoke.NewMux(zerologNop(), invoke.Options{})
	m.Handle("f", invoke.ServiceBusTrigger, func(_ ctxT, r *invoke.Request) (invoke.Result, error) {
		var err error
		got, err = r.ServiceBus("message")
		return invoke.Result{}, err
	})
	status, ct, reply := serve(m, "f", body)
	if _, err := parseReply(status, ct, reply); err != nil {
		t.Fatalf("reply: %v", err)
	}
	if string(got.Body) != `{"quote":"a \"b\""}` || got.DeliveryCount != 3 || got.MessageID != "m-1" ||
		!got.EnqueuedTime.Equal(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)) || got.ApplicationProperties["tenant"] != "contoso" {
		t.Errorf("decoded %+v", got)
	}
}

func TestRoute_Match(t *testing.T) {
	t.Parallel()
	tests := []struct {
		route, path string
		ok          bool
		params      map[string]string
	}{
		{"v1/{*path}", "/api/v1/batches/42", true, map[string]string{"path": "batches/42"}},
		{"v1/{*path}", "/api/v1", true, map[string]string{"path": ""}},
		{"orders/{id:int}", "/api/orders/42", true, map[string]string{"id": "42"}},
		{"orders/{id:int}", "/api/orders/x", false, nil},
		{"orders/{id?}", "/api/ORDERS", true, map[string]string{"id": ""}},
		{"orders/{id}", "/api/orders/1/extra", false, nil},
		{"orders", "/other/orders", false, nil},
	}
	for _, tt := range tests {
		params, ok := newRoute("api", tt.route, nil).match(tt.path)
		if ok != tt.ok {
			t.Errorf("route %q match %q = %v, want %v", tt.route, tt.path, ok, tt.ok)
			continue
		}
		for k, want := range tt.params {
			got := ""
			if params[k] != nil {
				got = *params[k]
			}
			if got != want {
				t.Errorf("route %q match %q: %s = %q, want %q", tt.route, tt.path, k, got, want)
			}
		}
	}
}
