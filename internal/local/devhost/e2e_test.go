package devhost_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/local/devhost"
	"github.com/offpath/offpath/internal/local/sbemu"
	"github.com/offpath/offpath/internal/testing/apptest"
)

// handlerBinary is the test handler, built once by TestMain.
func buildHandler(dir string) (string, error) {
	bin := filepath.Join(dir, "handler")
	cmd := exec.Command("go", "build", "-o", bin, "./internal/testhandler")
	cmd.Stderr = os.Stderr
	return bin, cmd.Run()
}

var testHandler string // set once in TestMain, read-only afterwards

// One Azurite serves the package's tests; each test app has queues and
// containers of its own and each host its own id, which keys its receipts
// and timer status.
var shared azurite.Shared

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "devhost-test")
	if err != nil {
		panic(err)
	}
	if testHandler, err = buildHandler(dir); err != nil {
		panic("build test handler: " + err.Error())
	}
	code := m.Run()
	shared.Stop()
	os.RemoveAll(dir)
	apptest.Cleanup()
	os.Exit(code)
}

// functions the test app can contain, by name.
var functionJSON = map[string]string{
	"sb-fn": `{"bindings":[
		{"type":"serviceBusTrigger","direction":"in","name":"message","queueName":"%QUEUE%","connection":"ServiceBus","dataType":"binary"},
		{"type":"serviceBus","direction":"out","name":"out","queueName":"%QUEUE%-out","connection":"ServiceBus"}]}`,
	"blob-fn":  `{"bindings":[{"type":"blobTrigger","direction":"in","name":"blob","path":"%CONTAINER%/{tenant}/{name}","connection":"AzureWebJobsStorage","dataType":"binary"}]}`,
	"blob-eg":  `{"bindings":[{"type":"blobTrigger","direction":"in","name":"blob","path":"%CONTAINER%/{tenant}/{name}","connection":"AzureWebJobsStorage","source":"EventGrid","dataType":"binary"}]}`,
	"timer-fn": `{"bindings":[{"type":"timerTrigger","direction":"in","name":"timer","schedule":"%SCHEDULE%","useMonitor":true}]}`,
	"echo": `{"bindings":[
		{"type":"httpTrigger","direction":"in","name":"req","authLevel":"function","methods":["post"],"route":"echo/{id:int}"},
		{"type":"http","direction":"out","name":"res"},
		{"type":"queue","direction":"out","name":"audit","queueName":"audit","connection":"AzureWebJobsStorage"}]}`,
	"api": `{"bindings":[
		{"type":"httpTrigger","direction":"in","name":"req","authLevel":"function","route":"v1/{*path}"},
		{"type":"http","direction":"out","name":"res"}]}`,
}

type testApp struct {
	dir, log, queue, container string
}

func newApp(t *testing.T, schedule string, fns ...string) *testApp {
	t.Helper()
	id := strconv.FormatInt(time.Now().UnixNano(), 36)
	a := &testApp{dir: t.TempDir(), queue: "q" + id, container: "c" + id}
	a.log = filepath.Join(a.dir, "invocations.jsonl")
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(a.dir, "host.json"), `{"version":"2.0","functionTimeout":"00:00:20",
		"customHandler":{"description":{"defaultExecutablePath":"handler"},"enableForwardingHttpRequest":true},
		"extensions":{"serviceBus":{"maxConcurrentCalls":4}}}`)
	write(filepath.Join(a.dir, "local.settings.json"), `{"IsEncrypted":false,"Values":{
		"FUNCTIONS_WORKER_RUNTIME":"custom","TESTHANDLER_LOG":"`+a.log+`",
		"DEVHOST_FUNCTION_KEY":"fkey","DEVHOST_MASTER_KEY":"mkey"}}`)
	for _, fn := range fns {
		body := strings.NewReplacer("%QUEUE%", a.queue, "%CONTAINER%", a.container, "%SCHEDULE%", schedule).Replace(functionJSON[fn])
		write(filepath.Join(a.dir, fn, "function.json"), body)
	}
	if err := os.Link(testHandler, filepath.Join(a.dir, "handler")); err != nil {
		t.Fatal(err)
	}
	return a
}

type record struct {
	Function      string            `json:"function"`
	Body          string            `json:"body"`
	DeliveryCount int               `json:"deliveryCount"`
	Tokens        map[string]string `json:"tokens"`
	Properties    json.RawMessage   `json:"properties"`
	IsPastDue     bool              `json:"isPastDue"`
	HasStatus     bool              `json:"hasStatus"`
	Query         string            `json:"query"`
}

func (a *testApp) records(t *testing.T, function string) []record {
	t.Helper()
	f, err := os.Open(a.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("record %q: %v", sc.Text(), err)
		}
		if r.Function == function {
			out = append(out, r)
		}
	}
	return out
}

type stack struct {
	az     *azurite.Azurite
	blobs  *azblob.Client
	bus    sbemu.Options
	broker *sbemu.Broker
	// readTimeout is the hosts' RequestReadTimeout (zero: the default).
	readTimeout time.Duration
}

func newStack(t *testing.T, maxDelivery int) *stack {
	t.Helper()
	az := shared.Get(t)
	blobs, err := azblob.NewClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	queues, err := azqueue.NewServiceClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	bus := sbemu.Options{LockDuration: 2 * time.Second, MaxDeliveryCount: maxDelivery}
	// The test's own client of the Service Bus stand-in, as a sender in
	// another process would be: the stand-in keeps its state in storage.
	broker, err := sbemu.New(queues, blobs, bus)
	if err != nil {
		t.Fatal(err)
	}
	return &stack{az: az, blobs: blobs, bus: bus, broker: broker}
}

// run starts a dev host for app and returns it with a stop function that
// waits for it to exit.
func (s *stack) run(t *testing.T, a *testApp) (*devhost.Host, func()) {
	t.Helper()
	app, err := devhost.LoadApp(a.dir, func(string) string { return "" })
	if err != nil {
		t.Fatalf("LoadApp: %v", err)
	}
	h, err := devhost.New(devhost.Options{
		App: app, Storage: s.az.ConnectionString(), ServiceBus: s.bus,
		HTTPAddr: "127.0.0.1:0", BlobPollInterval: 100 * time.Millisecond, HostID: "h" + strconv.FormatInt(time.Now().UnixNano(), 36),
		RequestReadTimeout: s.readTimeout,
	}, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatalf("devhost.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(40 * time.Second):
			t.Error("dev host did not stop")
		}
	}
	t.Cleanup(stop)
	return h, stop
}

func do(t *testing.T, method, url, key, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("x-functions-key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

func sbMessage(body string) sbemu.Message { return sbemu.Message{Body: []byte(body)} }

// rewriteQueue points b's sb-fn at b.queue.
func rewriteQueue(t *testing.T, b *testApp) {
	t.Helper()
	body := strings.NewReplacer("%QUEUE%", b.queue).Replace(functionJSON["sb-fn"])
	if err := os.WriteFile(filepath.Join(b.dir, "sb-fn", "function.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
