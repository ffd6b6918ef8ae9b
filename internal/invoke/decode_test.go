package invoke

import (
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
	tests := []struct {
		file   string
		want   Blob
		tenant string
	}{
		{"blob-binary.json", Blob{
			Content: []byte("id,qty\n7,3\n"), URL: "https://stexample.blob.core.windows.net/incoming/contoso/batch-001.csv",
			Name: "contoso/batch-001.csv", ETag: "0x8DD5A1B2C3D4E5F", ContentType: "text/csv", Length: 12,
			Metadata: map[string]string{"correlationid": "corr-7"},
		}, "contoso"},
		{"blob-deferred.json", Blob{
			Deferred: true, URL: "http://127.0.0.1:10000/devstoreaccount1/incoming/contoso/manual%20v2.pdf",
			Name: "contoso/manual v2.pdf", ETag: "0x8DD5A1B2C3D4E60", ContentType: "application/pdf", Length: 8388608,
			Metadata: map[string]string{},
		}, "contoso"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			r := loadEnvelope(t, tt.file)
			got, err := r.Blob("blob")
			if err != nil {
				t.Fatalf("Blob: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Blob(%s) =\n%+v\nwant\n%+v", tt.file, got, tt.want)
			}
			v, _ := r.Meta("tenant")
			if s, err := v.String(); err != nil || s != tt.tenant {
				t.Errorf("Meta(tenant) = %q, %v; want %q", s, err, tt.tenant)
			}
		})
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
		{"not JSON", `{"Data": {`, nil},
		{"array", `[1,2]`, nil},
		{"Data is a string", `{"Data": "x"}`, nil},
		{"Metadata is a number", `{"Data": {}, "Metadata": 5}`, nil},
		{"missing Data", `{"Metadata": {}}`, func(r *Request) error { _, err := r.ServiceBus("message"); return err }},
		{"missing binding", `{"Data": {"other": "AA=="}}`, func(r *Request) error { _, err := r.Blob("blob"); return err }},
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

func FuzzParseRequest(f *testing.F) {
	for _, name := range []string{"servicebus-binary.json", "blob-binary.json", "timer.json", "http-envelope.json"} {
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
