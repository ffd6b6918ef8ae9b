package devhost_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/devhost"
	"github.com/offpath/offpath/internal/local/sbemu"
	"github.com/offpath/offpath/internal/testing/poll"
	"github.com/offpath/offpath/internal/testing/slowloris"
)

func TestDevhost_BlobFiresOncePerETag(t *testing.T) {
	t.Parallel()
	s := newStack(t, 10)
	a := newApp(t, "", "blob-fn")
	h, _ := s.run(t, a)
	ctx := context.Background()
	if _, err := s.blobs.CreateContainer(ctx, a.container, nil); err != nil {
		t.Fatal(err)
	}
	first, err := s.blobs.UploadBuffer(ctx, a.container, "contoso/notes/a.txt", []byte("first"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.blobs.UploadBuffer(ctx, a.container, "toplevel.txt", []byte("no tenant"), nil); err != nil {
		t.Fatal(err)
	}
	inv := waitEvent(t, h, "the blob function", invokedFor(a.container+"/contoso/notes/a.txt", string(*first.ETag)))
	quietScans(t, h, "blob-fn", inv.At, 3)
	recs := a.records(t, "blob-fn")
	if len(recs) != 1 {
		t.Fatalf("blob fired %d times, want once: %+v", len(recs), recs)
	}
	// Tokens bind greedily left to right, as the host's BindingTemplateSource does.
	if r := recs[0]; r.Body != "first" || r.Tokens["tenant"] != "contoso/notes" || r.Tokens["name"] != "a.txt" || inv.Outcome != "succeeded" {
		t.Errorf("record = %+v, event %+v: want content and tokens tenant=contoso/notes name=a.txt", r, inv)
	}
	// Properties are what Get Blob Properties said, in the 5.x shape.
	var props struct {
		ETag          json.RawMessage
		ContentLength int64
		ContentHash   []byte
		CreatedOn     time.Time
		LastAccessed  string
	}
	sum := md5.Sum([]byte("first"))
	if err := json.Unmarshal(recs[0].Properties, &props); err != nil || string(props.ETag) != "{}" || props.ContentLength != 5 ||
		!bytes.Equal(props.ContentHash, sum[:]) || props.CreatedOn.IsZero() || props.LastAccessed != "0001-01-01T00:00:00+00:00" {
		t.Errorf("Properties %s (%v): want the 5.x shape of the blob", recs[0].Properties, err)
	}

	second, err := s.blobs.UploadBuffer(ctx, a.container, "contoso/notes/a.txt", []byte("second"), nil)
	if err != nil {
		t.Fatal(err)
	}
	inv = waitEvent(t, h, "the changed blob", invokedFor(a.container+"/contoso/notes/a.txt", string(*second.ETag)))
	quietScans(t, h, "blob-fn", inv.At, 3)
	recs = a.records(t, "blob-fn")
	if len(recs) != 2 || recs[1].Body != "second" {
		t.Fatalf("after the change: %+v, want exactly one more invocation with the new content", recs)
	}
}

// invokedFor matches the finished invocation for one version of a blob.
func invokedFor(blob, etag string) func(devhost.Event) bool {
	etag = strings.Trim(etag, `"`)
	return func(e devhost.Event) bool { return e.Kind == devhost.Invoked && e.Blob == blob && e.ETag == etag }
}

func waitEvent(t *testing.T, h *devhost.Host, what string, match func(devhost.Event) bool) devhost.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := h.Wait(ctx, match)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return e
}

// waitCount waits until n invocations of function have finished on h.
func waitCount(t *testing.T, h *devhost.Host, function string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.WaitCount(ctx, function, n); err != nil {
		t.Fatal(err)
	}
}

// quietScans waits for n whole scans of function's container after the
// one running at since, and fails the test if any of them fired.
func quietScans(t *testing.T, h *devhost.Host, function string, since time.Time, n int) {
	t.Helper()
	scans := 0
	waitEvent(t, h, fmt.Sprintf("%d more scans", n), func(e devhost.Event) bool {
		if e.Kind != devhost.BlobScanned || e.Function != function || !e.At.After(since) {
			return false
		}
		scans++
		if scans > 1 && e.Fired > 0 { // the first is the scan that was running at since
			t.Errorf("a later scan fired %d more invocations", e.Fired)
		}
		return scans > n
	})
}

func TestDevhost_ServiceBusRetriesThenDeadLetters(t *testing.T) {
	t.Parallel()
	const maxDelivery = 3
	s := newStack(t, maxDelivery)
	a := newApp(t, "", "sb-fn")
	h, _ := s.run(t, a)

	code, _, _ := do(t, http.MethodPost, h.URL()+"/devhost/servicebus/"+a.queue, "mkey", "please fail")
	if code != http.StatusCreated {
		t.Fatalf("send: status %d", code)
	}
	code, _, _ = do(t, http.MethodPost, h.URL()+"/devhost/servicebus/"+a.queue, "mkey", "hello")
	if code != http.StatusCreated {
		t.Fatalf("send: status %d", code)
	}
	code, body, _ := do(t, http.MethodPost, h.URL()+"/devhost/servicebus/"+a.queue, "mkey", strings.Repeat("x", 300<<10))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "256 KiB") {
		t.Errorf("300 KiB message: %d %q, want 413 naming the 256 KiB limit", code, body)
	}
	// The host's events tell each delivery's fate, with its count.
	var fates []string
	waitEvent(t, h, "the dead-lettering", func(e devhost.Event) bool {
		if e.Kind == devhost.Settled && e.Function == "sb-fn" && e.Outcome != sbemu.Completed {
			fates = append(fates, fmt.Sprintf("%s@%d", e.Outcome, e.DeliveryCount))
		}
		return e.Kind == devhost.Settled && e.Outcome == sbemu.DeadLettered
	})
	if want := []string{"abandoned@1", "abandoned@2", "deadlettered@3"}; !slices.Equal(fates, want) {
		t.Errorf("settlements %v, want %v", fates, want)
	}
	if _, dead, err := s.broker.Count(context.Background(), a.queue); err != nil || dead != 1 {
		t.Errorf("%d dead letters (%v), want 1", dead, err)
	}
	var counts []int
	for _, r := range a.records(t, "sb-fn") {
		if r.Body == "please fail" {
			counts = append(counts, r.DeliveryCount)
		}
	}
	if len(counts) != maxDelivery || counts[0] != 1 || counts[1] != 2 || counts[2] != 3 {
		t.Errorf("failing message delivered with DeliveryCount %v, want [1 2 3]", counts)
	}
	letters, err := s.broker.DeadLetters(context.Background(), a.queue, 10)
	if err != nil || len(letters) != 1 || string(letters[0].Body) != "please fail" || letters[0].DeadLetterReason != "MaxDeliveryCountExceeded" {
		t.Errorf("dead letters = %+v, %v", letters, err)
	}
	// The good message completed and its output arrived intact: "done" was
	// sent base64-encoded, so the host decoded it back to "done".
	poll.Until(t, 10*time.Second, "the output message", func() bool {
		d, err := s.broker.Receive(context.Background(), a.queue+"-out")
		if err != nil || d == nil {
			return false
		}
		if string(d.Body) != "done" {
			t.Errorf("output body = %q, want %q", d.Body, "done")
		}
		return true
	})
}

func TestDevhost_MessageSurvivesRestart(t *testing.T) {
	t.Parallel()
	s := newStack(t, 10)
	a := newApp(t, "", "sb-fn")
	if err := s.broker.Send(context.Background(), a.queue, sbMessage("crash")); err != nil {
		t.Fatal(err)
	}
	// The handler dies on "crash": the dev host restarts it, and the
	// message, abandoned by the failed call, is redelivered until the
	// handler behaves. We stop the dev host meanwhile and start another.
	_, stop := s.run(t, a)
	poll.Until(t, 15*time.Second, "the first delivery", func() bool { return len(a.records(t, "sb-fn")) >= 1 })
	stop()
	delivered := len(a.records(t, "sb-fn"))

	b := newApp(t, "", "sb-fn")
	b.queue = a.queue
	rewriteQueue(t, b)
	if err := s.broker.Send(context.Background(), a.queue, sbMessage("after restart")); err != nil {
		t.Fatal(err)
	}
	s.run(t, b)
	// Both messages reach the new dev host: the new one, and the crashing
	// one again, its DeliveryCount continuing from before the restart.
	poll.Until(t, 30*time.Second, "both messages after the restart", func() bool {
		after, crashAgain := false, false
		for _, r := range b.records(t, "sb-fn") {
			after = after || r.Body == "after restart"
			crashAgain = crashAgain || (r.Body == "crash" && r.DeliveryCount > delivered)
		}
		return after && crashAgain
	})
	var crash []int
	for _, r := range append(a.records(t, "sb-fn"), b.records(t, "sb-fn")...) {
		if r.Body == "crash" {
			crash = append(crash, r.DeliveryCount)
		}
	}
	for i := 1; i < len(crash); i++ {
		if crash[i] <= crash[i-1] {
			t.Errorf("crash message deliveries %v: DeliveryCount must grow across the restart", crash)
		}
	}
}

func TestDevhost_TimerOnScheduleAndAdmin(t *testing.T) {
	t.Parallel()
	s := newStack(t, 10)
	a := newApp(t, "*/1 * * * * *", "timer-fn")
	h, _ := s.run(t, a)
	waitCount(t, h, "timer-fn", 2) // two scheduled firings
	for _, r := range a.records(t, "timer-fn") {
		if !r.HasStatus {
			t.Errorf("timer fired without ScheduleStatus: %+v", r)
		}
	}

	b := newApp(t, "0 0 0 1 1 *", "timer-fn") // yearly: only the admin call fires it
	hb, _ := s.run(t, b)
	if code, _, _ := do(t, http.MethodPost, hb.URL()+"/admin/functions/timer-fn", "fkey", `{}`); code != http.StatusUnauthorized {
		t.Errorf("admin with a function key: status %d, want 401", code)
	}
	if code, _, _ := do(t, http.MethodPost, hb.URL()+"/admin/functions/timer-fn", "mkey", `{"input":""}`); code != http.StatusAccepted {
		t.Errorf("admin fire: status %d, want 202", code)
	}
	waitCount(t, hb, "timer-fn", 1) // the admin firing, and no other: the schedule is yearly
	if n := len(b.records(t, "timer-fn")); n != 1 {
		t.Errorf("the handler saw %d firings, want the admin's 1", n)
	}
	if code, _, _ := do(t, http.MethodPost, h.URL()+"/admin/functions/nope", "mkey", `{}`); code != http.StatusNotFound {
		t.Errorf("admin on unknown function: status %d, want 404", code)
	}
}

func TestDevhost_HTTPKeysAndModes(t *testing.T) {
	t.Parallel()
	s := newStack(t, 10)
	a := newApp(t, "", "api", "echo")
	h, _ := s.run(t, a)
	tests := []struct {
		name, method, path, key, body string
		want                          int
		contains                      string
	}{
		{"no key", http.MethodGet, "/api/v1/hello", "", "", http.StatusUnauthorized, ""},
		{"wrong key", http.MethodGet, "/api/v1/hello", "nope", "", http.StatusUnauthorized, ""},
		{"function key, forwarded with path and invocation id", http.MethodGet, "/api/v1/hello", "fkey", "", http.StatusOK, `"path":"/api/v1/hello","invocation":"`},
		{"master key works too", http.MethodGet, "/api/v1/x", "mkey", "", http.StatusOK, `"path":"/api/v1/x"`},
		{"code query", http.MethodGet, "/api/v1/q?code=fkey", "", "", http.StatusOK, `"path":"/api/v1/q"`},
		{"envelope mode res", http.MethodPost, "/api/echo/42?q=1", "fkey", "ping", http.StatusCreated, "echo:ping"},
		{"route constraint", http.MethodPost, "/api/echo/abc", "fkey", "ping", http.StatusNotFound, ""},
		{"method not allowed by trigger", http.MethodGet, "/api/echo/42", "fkey", "", http.StatusNotFound, ""},
		{"unknown route", http.MethodGet, "/api/nothing", "fkey", "", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		code, body, _ := do(t, tt.method, h.URL()+tt.path, tt.key, tt.body)
		if code != tt.want || !strings.Contains(body, tt.contains) {
			t.Errorf("%s: %s %s = %d %q, want %d containing %q", tt.name, tt.method, tt.path, code, body, tt.want, tt.contains)
		}
	}
	if recs := a.records(t, "echo"); len(recs) != 1 || recs[0].Body != "ping" || recs[0].Query != "1" {
		t.Errorf("echo records = %+v, want one with body ping and q=1", recs)
	}
}

// TestDevhost_EventGridWebhook: the blobs extension's webhook answers Event
// Grid's validation handshake and runs the function for a BlobCreated
// event (Event Grid or CloudEvents schema) on the blob's current version;
// it refuses callers without the key and unknown functions.
func TestDevhost_EventGridWebhook(t *testing.T) {
	t.Parallel()
	s := newStack(t, 10)
	a := newApp(t, "", "blob-eg")
	h, _ := s.run(t, a)
	ctx := context.Background()
	if _, err := s.blobs.CreateContainer(ctx, a.container, nil); err != nil {
		t.Fatal(err)
	}
	up, err := s.blobs.UploadBuffer(ctx, a.container, "contoso/a.txt", []byte("event"), nil)
	if err != nil {
		t.Fatal(err)
	}
	blob := a.container + "/contoso/a.txt"
	first := waitEvent(t, h, "the scan's invocation", invokedFor(blob, string(*up.ETag)))

	hook := h.URL() + "/runtime/webhooks/blobs?functionName=Host.Functions.blob-eg"
	post := func(key, eventType, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, hook, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("aeg-event-type", eventType)
		req.Header.Set("x-functions-key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := post("mkey", "SubscriptionValidation",
		`[{"id":"1","eventType":"Microsoft.EventGrid.SubscriptionValidationEvent","subject":"","data":{"validationCode":"512d38b6"}}]`); code != http.StatusOK || !strings.Contains(body, `"validationResponse":"512d38b6"`) {
		t.Errorf("validation: %d %s", code, body)
	}
	created := `[{"eventType":"Microsoft.Storage.BlobCreated","subject":"/blobServices/default/containers/` + a.container + `/blobs/contoso/a.txt","data":{"url":"x"}}]`
	if code, _ := post("fkey", "Notification", created); code != http.StatusUnauthorized {
		t.Errorf("function key: %d, want 401 (the system key is needed)", code)
	}
	if code, _ := post("mkey", "Notification", "not json"); code != http.StatusBadRequest {
		t.Errorf("garbage: %d, want 400", code)
	}
	if code, _ := post("mkey", "Notification", created); code != http.StatusAccepted {
		t.Fatalf("BlobCreated: %d, want 202", code)
	}
	again := waitEvent(t, h, "the webhook's invocation", func(e devhost.Event) bool {
		return e.Kind == devhost.Invoked && e.Blob == blob && e.InvocationID != first.InvocationID
	})
	if again.ETag != first.ETag || again.Outcome != "succeeded" {
		t.Errorf("webhook invocation %+v, want the same version, succeeded", again)
	}
	// CloudEvents schema, for a blob that is gone: skipped, counted done.
	gone := `{"specversion":"1.0","type":"Microsoft.Storage.BlobCreated","source":"x","id":"2","subject":"/blobServices/default/containers/` + a.container + `/blobs/contoso/gone.txt","data":{}}`
	if code, _ := post("mkey", "Notification", gone); code != http.StatusAccepted {
		t.Fatalf("CloudEvent: %d, want 202", code)
	}
	waitEvent(t, h, "the skipped blob", func(e devhost.Event) bool {
		return e.Kind == devhost.BlobSkipped && e.Blob == a.container+"/contoso/gone.txt"
	})
	req, _ := http.NewRequest(http.MethodPost, h.URL()+"/runtime/webhooks/blobs?functionName=Host.Functions.nope", strings.NewReader(created))
	req.Header.Set("x-functions-key", "mkey")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown function: %d, want 404", res.StatusCode)
	}
}

// TestDevhost_CutsOffSlowClients: a caller that sends its body (or its
// headers) a byte at a time is cut off once RequestReadTimeout has passed,
// however long it would go on; the host goes on serving.
func TestDevhost_CutsOffSlowClients(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	s := newStack(t, 10)
	s.readTimeout = timeout
	h, _ := s.run(t, newApp(t, "", "api", "echo"))
	addr := strings.TrimPrefix(h.URL(), "http://")
	// Forwarded to the handler (api), and in envelope mode (echo).
	for _, c := range []struct {
		name, path string
		trickle    func(string, string, time.Duration, time.Duration) (slowloris.Result, error)
	}{
		{"forwarded body", "/api/v1/hello", slowloris.Body},
		{"envelope body", "/api/echo/42", slowloris.Body},
		{"headers", "/api/v1/hello", slowloris.Headers},
	} {
		name := c.name
		head := "POST " + c.path + " HTTP/1.1\r\nHost: " + addr + "\r\nx-functions-key: fkey\r\nContent-Length: 1000000\r\n\r\n"
		r, err := c.trickle(addr, head, 10*time.Millisecond, 20*timeout)
		if err != nil {
			t.Fatalf("slow %s: %v", name, err)
		}
		if r.Elapsed < timeout {
			t.Errorf("slow %s: cut off after %v, before the %v timeout", name, r.Elapsed, timeout)
		}
		status, _, _ := strings.Cut(r.Response, "\r\n")
		if name == "envelope body" && !strings.HasPrefix(status, "HTTP/1.1 400") {
			t.Errorf("slow envelope body: the host answered %q, want 400", status)
		}
		t.Logf("slow %s: cut off after %v and %d bytes; the host answered %q", name, r.Elapsed.Round(time.Millisecond), r.Sent, status)
	}
	if code, body, _ := do(t, http.MethodGet, h.URL()+"/api/v1/hello", "fkey", ""); code != http.StatusOK {
		t.Errorf("after the slow clients: %d %s", code, body)
	}
}

// TestDevhost_RequestBodyLimit: FUNCTIONS_REQUEST_BODY_SIZE_LIMIT moves the
// host's request body limit (100 MB without it): a body over it is 413
// before any function runs, one within it is served; a limit that is no
// positive number stops the host from loading the app.
func TestDevhost_RequestBodyLimit(t *testing.T) {
	t.Parallel()
	s := newStack(t, 10)
	a := newApp(t, "", "api")
	settings := filepath.Join(a.dir, "local.settings.json")
	b, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	limited := strings.Replace(string(b), `"Values":{`, `"Values":{"FUNCTIONS_REQUEST_BODY_SIZE_LIMIT":"1024",`, 1)
	if err := os.WriteFile(settings, []byte(limited), 0o644); err != nil {
		t.Fatal(err)
	}
	h, _ := s.run(t, a)
	if code, body, _ := do(t, http.MethodPost, h.URL()+"/api/v1/upload", "fkey", strings.Repeat("x", 1025)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("1025 bytes over a 1024-byte limit: %d %s, want 413", code, body)
	}
	if code, body, _ := do(t, http.MethodPost, h.URL()+"/api/v1/upload", "fkey", strings.Repeat("x", 1024)); code != http.StatusOK {
		t.Errorf("1024 bytes within the limit: %d %s, want 200", code, body)
	}

	for _, bad := range []string{"0", "-5", "100MB"} {
		if err := os.WriteFile(settings, []byte(strings.Replace(string(b), `"Values":{`, `"Values":{"FUNCTIONS_REQUEST_BODY_SIZE_LIMIT":"`+bad+`",`, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := devhost.LoadApp(a.dir, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "FUNCTIONS_REQUEST_BODY_SIZE_LIMIT") {
			t.Errorf("limit %q: LoadApp error %v, want one naming the setting", bad, err)
		}
	}
	if err := os.WriteFile(settings, b, 0o644); err != nil {
		t.Fatal(err)
	}
	app, err := devhost.LoadApp(a.dir, func(string) string { return "" })
	if err != nil || app.MaxRequestBody != 100<<20 {
		t.Errorf("without the setting: limit %v (%v), want 100 MB", app, err)
	}
}
