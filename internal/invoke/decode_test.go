package invoke

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func loadEnvelope(t *testing.T, file string) *Request {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var r Request
	if err := parseRequest(&r, body); err != nil {
		t.Fatalf("parseRequest(%s): %v", file, err)
	}
	return &r
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestRequest_ServiceBus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want ServiceBusMessage
	}{
		{"servicebus-binary.json", ServiceBusMessage{
			Body: []byte(`{"orderId":42}`), MessageID: "9f2c41d0a7", CorrelationID: "req-5521",
			ContentType: "application/json", DeliveryCount: 3, SequenceNumber: 118,
			EnqueuedTime: utc("2025-03-01T12:00:00Z"), ExpiresAt: utc("2025-03-15T12:00:00Z"),
			LockToken:             "3f6e0c6a-1111-4222-8333-944455556666",
			ApplicationProperties: map[string]any{"tenant": "contoso", "attempt": float64(2)},
		}},
		{"servicebus-string.json", ServiceBusMessage{
			Body: []byte(`{"orderId":42}`), MessageID: "9f2c41d0a8", Subject: "claim-check",
			DeliveryCount: 1, SequenceNumber: 119, EnqueuedTime: utc("2025-03-01T12:00:00Z"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			got, err := loadEnvelope(t, tt.file).ServiceBus("message")
			if err != nil {
				t.Fatalf("ServiceBus: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ServiceBus(%s) =\n%+v\nwant\n%+v", tt.file, got, tt.want)
			}
		})
	}
}

func TestRequest_Blob(t *testing.T) {
	t.Parallel()
	csv := []byte("id,qty\n7,3\n")
	tests := []struct {
		file string
		want Blob
	}{
		// The older SDK: Length, ContentMD5, Created, a quoted ETag, enums as numbers.
		{"blob-oldsdk.json", Blob{
			Content: csv, URL: "https://stexample.blob.core.windows.net/incoming/contoso/batch-003.csv",
			Container: "incoming", Name: "contoso/batch-003.csv", ETag: "0x8DD5A1B2C3D4E61", ContentType: "text/csv", Length: 12,
			LastModified: utc("2025-03-01T08:00:00Z"), Created: utc("2025-03-01T07:59:59Z"),
			Metadata: map[string]string{"CorrelationId": "corr-9"},
		}},
		// The same with ContentLength and no BlobTrigger: located by Uri.
		{"blob-binary.json", Blob{
			Content: csv, URL: "https://stexample.blob.core.windows.net/incoming/contoso/batch-001.csv",
			Container: "incoming", Name: "contoso/batch-001.csv", ETag: "0x8DD5A1B2C3D4E5F", ContentType: "text/csv", Length: 12,
			LastModified: utc("2025-03-01T08:00:00Z"), Metadata: map[string]string{"correlationid": "corr-7"},
		}},
		// Storage extension 5.x: ETag {}, ContentLength, ContentHash, CreatedOn, "never" dates.
		{"blob-5x.json", Blob{
			Content: csv, URL: "https://stexample.blob.core.windows.net/incoming/contoso/batch-002.csv",
			Container: "incoming", Name: "contoso/batch-002.csv", ContentType: "text/csv", Length: 12,
			LastModified: utc("2025-03-01T08:00:00Z"), Created: utc("2025-03-01T07:59:59Z"),
			Metadata: map[string]string{"correlation_id": "corr-8"},
		}},
		// 5.x, deferred binding, enums as strings, a length as a string, a
		// "never" creation date; the descriptor's own ContentType is not the blob's.
		{"blob-5x-deferred.json", Blob{
			Deferred: true, URL: "http://127.0.0.1:10000/devstoreaccount1/incoming/contoso/kb/Z%C3%BCrich%20notes.md",
			Container: "incoming", Name: "contoso/kb/Zürich notes.md", ContentType: "text/markdown", Length: 284,
			LastModified: utc("2025-03-01T08:00:00Z"), Metadata: map[string]string{"correlation_id": "Z%C3%BCrich%E2%80%93%CE%94-0042"},
		}},
		// The older deferred shape, located by Uri on Azurite (path-style).
		{"blob-deferred.json", Blob{
			Deferred: true, URL: "http://127.0.0.1:10000/devstoreaccount1/incoming/contoso/manual%20v2.pdf",
			Container: "incoming", Name: "contoso/manual v2.pdf", ETag: "0x8DD5A1B2C3D4E60", ContentType: "application/pdf", Length: 8388608,
			Metadata: map[string]string{},
		}},
		// The Event Grid source: the same binding data, 5.x Properties, a deferred descriptor.
		{"blob-eventgrid.json", Blob{
			Deferred: true, URL: "https://stexample.blob.core.windows.net/incoming/contoso/reports/q1.txt",
			Container: "incoming", Name: "contoso/reports/q1.txt", ContentType: "text/plain", Length: 524288,
			LastModified: utc("2025-03-01T08:00:00Z"), Created: utc("2025-03-01T08:00:00Z"), Metadata: map[string]string{},
		}},
		// A BlobCreated event itself in Data, as an array of one, nothing in Metadata.
		{"blob-eventgrid-event.json", Blob{
			Deferred: true, URL: "https://stexample.blob.core.windows.net/incoming/contoso/reports/q2.txt",
			Container: "incoming", Name: "contoso/reports/q2.txt", ETag: "0x8D4BCC2E4835CD0", ContentType: "text/plain", Length: 524288,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			got, err := loadEnvelope(t, tt.file).Blob("blob")
			if err != nil {
				t.Fatalf("Blob: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Blob(%s) =\n%#v\nwant\n%#v", tt.file, got, tt.want)
			}
		})
	}
}

// TestRequest_BlobPropertiesNeverFail: whatever Properties and Metadata
// hold, the blob decodes; only what locates it matters.
func TestRequest_BlobPropertiesNeverFail(t *testing.T) {
	t.Parallel()
	for _, props := range []string{
		`null`, `{}`, `"not an object"`, `"{\"ContentLength\":5}"`, `[1,2]`, `42`, `true`,
		`{"ETag": 7, "ContentLength": "many", "Length": -1, "ContentType": {"x": 1}, "CreatedOn": "yesterday", "LastModified": 12}`,
		`{"ETag": {"value": "0x1"}, "ContentHash": [1,2,3], "BlobType": "Page", "Unknown": {"deep": [{"er": null}]}}`,
	} {
		for _, md := range []string{`null`, `{}`, `{"a": 1, "b": {"c": 2}, "d": "ok"}`, `"text"`, `[]`} {
			body := `{"Data": {"blob": "aGk="}, "Metadata": {"Uri": "\"https://st.blob.core.windows.net/incoming/acme/a.txt\"", "Properties": ` + props + `, "Metadata": ` + md + `}}`
			var r Request
			if err := parseRequest(&r, []byte(body)); err != nil {
				t.Fatalf("parseRequest(%s): %v", body, err)
			}
			b, err := r.Blob("blob")
			if err != nil || b.Name != "acme/a.txt" || string(b.Content) != "hi" {
				t.Errorf("Properties %s, Metadata %s: %+v, %v; want the blob located", props, md, b, err)
			}
		}
	}
}

func TestRequest_Timer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want Timer
	}{
		{"timer.json", Timer{Last: utc("2025-03-01T06:00:00Z"), Next: utc("2025-03-01T06:05:00Z"), LastUpdated: utc("2025-03-01T06:00:00.2145Z")}},
		{"timer-first-run.json", Timer{IsPastDue: true, Next: utc("2025-03-01T06:05:00Z")}},
		{"timer-no-monitor.json", Timer{}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			got, err := loadEnvelope(t, tt.file).Timer("timer")
			if err != nil {
				t.Fatalf("Timer: %v", err)
			}
			if got != tt.want {
				t.Errorf("Timer(%s) = %+v, want %+v", tt.file, got, tt.want)
			}
		})
	}
}

func TestRequest_HTTP(t *testing.T) {
	t.Parallel()
	got, err := loadEnvelope(t, "http-envelope.json").HTTP("req")
	if err != nil {
		t.Fatalf("HTTP: %v", err)
	}
	if got.Method != "POST" || got.Query.Get("dryRun") != "true" || got.Header.Get("Content-Type") != "application/json" ||
		got.Params["id"] != "42" || string(got.Body) != `{"quantity":3}` {
		t.Errorf("HTTP(http-envelope.json) = %+v", got)
	}
	if _, ok := got.Params["rest"]; ok {
		t.Errorf("null route parameter kept: %+v", got.Params)
	}
	bin, err := loadEnvelope(t, "http-envelope-binary.json").HTTP("req")
	if err != nil {
		t.Fatalf("HTTP binary: %v", err)
	}
	if want := []byte{0, 1, 2, 255}; !reflect.DeepEqual(bin.Body, want) {
		t.Errorf("binary body = %v, want %v", bin.Body, want)
	}
}

func TestValue_Tolerance(t *testing.T) {
	t.Parallel()
	strs := []struct{ raw, want string }{
		{`"\"abc\""`, "abc"},
		{`"abc"`, "abc"},
		{`"\"a \\\"quoted\\\" word\""`, `a "quoted" word`},
		{`3`, "3"},
		{`true`, "true"},
		{`null`, ""},
		{`"\"\""`, ""},
		{`"\"h\\u00e9\""`, "hé"},
	}
	for _, tt := range strs {
		if got, err := Value(tt.raw).String(); err != nil || got != tt.want {
			t.Errorf("Value(%s).String() = %q, %v; want %q", tt.raw, got, err, tt.want)
		}
	}
	ints := []struct {
		raw  string
		want int64
	}{{`"3"`, 3}, {`3`, 3}, {`"\"7\""`, 7}, {`" 12 "`, 12}}
	for _, tt := range ints {
		if got, err := Value(tt.raw).Int(); err != nil || got != tt.want {
			t.Errorf("Value(%s).Int() = %d, %v; want %d", tt.raw, got, err, tt.want)
		}
	}
	bools := []struct {
		raw  string
		want bool
	}{{`"true"`, true}, {`"True"`, true}, {`false`, false}, {`"False"`, false}}
	for _, tt := range bools {
		if got, err := Value(tt.raw).Bool(); err != nil || got != tt.want {
			t.Errorf("Value(%s).Bool() = %v, %v; want %v", tt.raw, got, err, tt.want)
		}
	}
	times := []struct {
		raw  string
		want time.Time
	}{
		{`"2025-03-01T10:20:30"`, utc("2025-03-01T10:20:30Z")},
		{`"2025-03-01T10:20:30+00:00"`, utc("2025-03-01T10:20:30Z")},
		{`"2025-03-01T11:20:30+01:00"`, utc("2025-03-01T10:20:30Z")},
		{`"2025-03-01T10:20:30.1234567Z"`, utc("2025-03-01T10:20:30.1234567Z")},
		{`"2025-03-01T10:20:30.1234567"`, utc("2025-03-01T10:20:30.1234567Z")},
		{`"\"2025-03-01T10:20:30Z\""`, utc("2025-03-01T10:20:30Z")},
		{`"0001-01-01T00:00:00"`, time.Time{}},
		{`"0001-01-01T00:00:00+00:00"`, time.Time{}},
		{`null`, time.Time{}},
	}
	for _, tt := range times {
		if got, err := Value(tt.raw).Time(); err != nil || !got.Equal(tt.want) {
			t.Errorf("Value(%s).Time() = %v, %v; want %v", tt.raw, got, err, tt.want)
		}
	}
	bad := []struct {
		name string
		err  func() error
	}{
		{"object as string", func() error { _, err := Value(`{}`).String(); return err }},
		{"word as int", func() error { _, err := Value(`"three"`).Int(); return err }},
		{"word as bool", func() error { _, err := Value(`"yes"`).Bool(); return err }},
		{"garbage time", func() error { _, err := Value(`"yesterday"`).Time(); return err }},
		{"number as body", func() error { _, err := Value(`42`).Bytes(); return err }},
		{"non-base64 body", func() error { _, err := Value(`"not base64!"`).Bytes(); return err }},
	}
	for _, tt := range bad {
		if err := tt.err(); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

func TestRequest_Malformed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		use  func(*Request) error
	}{
		{"Data is a string", `{"Data": "x"}`, nil},
		{"Metadata is a number", `{"Data": {}, "Metadata": 5}`, nil},
		{"missing Data", `{"Metadata": {}}`, func(r *Request) error { _, err := r.ServiceBus("message"); return err }},
		{"missing binding", `{"Data": {"other": "AA=="}}`, func(r *Request) error { _, err := r.Blob("blob"); return err }},
		{"blob is a number", `{"Data": {"blob": 5}, "Metadata": {"name": "\"acme/a.txt\""}}`, func(r *Request) error { _, err := r.Blob("blob"); return err }},
		{"blob is invalid base64", `{"Data": {"blob": "%%%"}, "Metadata": {"name": "\"acme/a.txt\""}}`, func(r *Request) error { _, err := r.Blob("blob"); return err }},
		{"blob is an array of two", `{"Data": {"blob": [{}, {}]}, "Metadata": {"name": "\"acme/a.txt\""}}`, func(r *Request) error { _, err := r.Blob("blob"); return err }},
		{"nothing locates the blob", `{"Data": {"blob": "AA=="}, "Metadata": {"Properties": {}}}`, func(r *Request) error { _, err := r.Blob("blob"); return err }},
		{"timer is a string", `{"Data": {"timer": "\"x\""}}`, func(r *Request) error { _, err := r.Timer("timer"); return err }},
		{"DeliveryCount is a word", `{"Data": {"message": "AA=="}, "Metadata": {"DeliveryCount": "\"many\""}}`, func(r *Request) error { _, err := r.ServiceBus("message"); return err }},
		{"req is an array", `{"Data": {"req": []}}`, func(r *Request) error { _, err := r.HTTP("req"); return err }},
		{"ApplicationProperties is a number", `{"Data": {"message": "AA=="}, "Metadata": {"ApplicationProperties": 4}}`, func(r *Request) error { _, err := r.ServiceBus("message"); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r Request
			err := parseRequest(&r, []byte(tt.body))
			if err == nil && tt.use != nil {
				err = tt.use(&r)
			}
			if !isBadEnvelope(err) {
				t.Errorf("decoding %s: err = %v, want an invalid-envelope error", tt.body, err)
			}
		})
	}
}

func TestRequest_NotAnEnvelope(t *testing.T) {
	t.Parallel()
	for _, body := range []string{``, `{"Data": {`, `[1,2]`, `null`, `"x"`, `7`} {
		var r Request
		if err := parseRequest(&r, []byte(body)); !errors.Is(err, errNotEnvelope) {
			t.Errorf("parseRequest(%q) = %v, want not an envelope", body, err)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, name := range []string{"servicebus-binary.json", "blob-binary.json", "blob-5x.json", "blob-eventgrid-event.json", "timer.json", "http-envelope.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var r Request
		if parseRequest(&r, body) != nil {
			return
		}
		_, _ = r.ServiceBus("message")
		_, _ = r.Blob("blob")
		_, _ = r.Timer("timer")
		_, _ = r.HTTP("req")
	})
}
