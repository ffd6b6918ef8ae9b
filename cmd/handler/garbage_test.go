package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/poll"
)

// triggerFunction is a function of the app folder and its trigger binding,
// as its function.json declares them.
type triggerFunction struct {
	name, trigger, binding string
}

// appFunctions reads every function.json of the repository's functions/.
func appFunctions(t *testing.T) []triggerFunction {
	t.Helper()
	files, err := filepath.Glob("../../functions/*/function.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no function.json under ../../functions: %v", err)
	}
	var fns []triggerFunction
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var def struct {
			Bindings []struct{ Type, Name, Direction string }
		}
		if err := json.Unmarshal(b, &def); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, b := range def.Bindings {
			if strings.HasSuffix(b.Type, "Trigger") {
				fns = append(fns, triggerFunction{name: filepath.Base(filepath.Dir(f)), trigger: b.Type, binding: b.Name})
			}
		}
	}
	return fns
}

// TestRun_GarbageIsNeverRetried walks every trigger the app folder
// declares, through the real handler, with data no retry can fix: each is
// answered 2xx with its rejection recorded in the document statuses (400
// for a body that is no envelope at all), never 5xx, and the handler still
// answers afterwards.
func TestRun_GarbageIsNeverRetried(t *testing.T) {
	t.Parallel()
	az := azurite.Start(t)
	sim, err := aoaisim.New(aoaisim.Config{Deployments: aoaisim.DefaultDeployments()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	simURL, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "host.json"), []byte(`{"functionTimeout":"00:05:00"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	copyModels(t, root)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tables, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: az.ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	tenants := tablestore.NewTenants(tables, tablestore.DefaultTenantsTable)
	for id, alias := range map[string]string{"contoso": "ingest", "support": "summarize"} {
		tn := tenant.New(id, id, time.Now())
		tn.Aliases = []string{alias}
		if err := tenants.Create(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	docs := tablestore.NewDocuments(tables, "", nil)

	port := freePort(t)
	env := map[string]string{
		"FUNCTIONS_CUSTOMHANDLER_PORT": strconv.Itoa(port), "FUNCTIONS_APP_ROOT_PATH": root,
		"AzureWebJobsStorage": az.ConnectionString(), "OFFPATH_AOAI_ENDPOINT": simURL, "OFFPATH_AOAI_API_KEY": aoaisim.DefaultKey,
	}
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }, out) }()
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	waitReady(t, base, done)

	notAClaimCheck := []byte("not a claim check")
	sum := sha256.Sum256(notAClaimCheck)
	blobURL := az.BlobURL + "/incoming/"
	valid := map[string]string{
		"blobTrigger":       `{"Source":"AzureStorageBlobs","Version":"1.0","ContentType":"application/json","Content":{"IsEmpty":false,"Length":9,"MediaType":"text/plain"}}`,
		"serviceBusTrigger": strconv.Quote(base64.StdEncoding.EncodeToString(notAClaimCheck)),
		"timerTrigger":      `{"Schedule":{"AdjustForDST":true},"ScheduleStatus":null,"IsPastDue":false}`,
	}
	cases := []struct {
		name string
		body func(binding, good, meta string) string
		want int
	}{
		{"invalid-base64", func(b, _, m string) string { return `{"Data":{"` + b + `":"!!not base64!!"},"Metadata":` + m + `}` }, 200},
		{"wrong-type", func(b, _, m string) string { return `{"Data":{"` + b + `":42},"Metadata":` + m + `}` }, 200},
		{"missing-data", func(_, _, m string) string { return `{"Metadata":` + m + `}` }, 200},
		{"missing-metadata", func(b, g, _ string) string { return `{"Data":{"` + b + `":` + g + `}}` }, 200},
		{"null-body", func(string, string, string) string { return `null` }, 400},
		{"truncated", func(b, g, m string) string {
			s := `{"Data":{"` + b + `":` + g + `},"Metadata":` + m + `}`
			return s[:len(s)/2]
		}, 400},
	}

	fns := appFunctions(t)
	walked := 0
	for _, fn := range fns {
		good, ok := valid[fn.trigger]
		if !ok {
			if fn.trigger != "httpTrigger" {
				t.Errorf("function %s: trigger %s is not walked; add it", fn.name, fn.trigger)
			}
			continue // forwarded HTTP (infracheck proves it is): the API's and the door's own tests cover its input
		}
		walked++
		for _, c := range cases {
			id := fn.name + "-" + c.name
			var meta string
			var partition, key string
			switch fn.trigger {
			case "blobTrigger":
				name := "contoso/garbage-" + c.name + ".txt"
				meta = `{"BlobTrigger":"\"incoming/` + name + `\"","Uri":"\"` + blobURL + name + `\"","name":"\"` + name + `\"","Properties":{"ETag":{}},"Metadata":{}}`
				partition, key = "contoso", name
			case "serviceBusTrigger":
				meta = `{"MessageId":"\"` + id + `\"","DeliveryCount":"1"}`
				partition, key = document.Unattributed, "message "+id
			default:
				meta = `{"sys":{"MethodName":"` + fn.name + `","UtcNow":"2026-12-01T06:00:00Z"}}`
				partition, key = document.Unattributed, "invocation "+fn.name+" "+id
			}
			switch {
			case c.name != "missing-metadata":
			case fn.trigger == "blobTrigger": // nothing locates the blob
				partition, key = document.Unattributed, "invocation "+fn.name+" "+id
			case fn.trigger == "serviceBusTrigger": // decodable: the function rejects the claim check
				partition, key = document.Unattributed, "message sha256:"+hex.EncodeToString(sum[:16])
			default: // a timer reads nothing from Metadata: it runs
				key = ""
			}
			status, reply := post(t, base+"/"+fn.name, id, c.body(fn.binding, good, meta))
			if status != c.want {
				t.Errorf("%s × %s: %d %s, want %d", fn.name, c.name, status, reply, c.want)
				continue
			}
			if c.want != 200 || key == "" {
				continue
			}
			st, err := docs.Get(ctx, partition, key)
			if err != nil || st.State != document.Rejected || st.Reason == "" {
				t.Errorf("%s × %s: status %s/%s = %+v, %v; want a recorded rejection", fn.name, c.name, partition, key, st, err)
			} else if strings.Contains(st.Reason, "not base64!!") {
				t.Errorf("%s × %s: the reason holds the payload: %s", fn.name, c.name, st.Reason)
			}
		}
	}
	if walked < 7 {
		t.Errorf("walked %d triggers of %v; want every blob, Service Bus and timer function", walked, fns)
	}
	if status, reply := post(t, base+"/batch-poll", "after", `{"Data":{"timer":`+valid["timerTrigger"]+`},"Metadata":{}}`); status != 200 {
		t.Errorf("a good invocation after the garbage: %d %s", status, reply)
	}
	if strings.Contains(out.String(), "not base64!!") || strings.Contains(out.String(), string(notAClaimCheck)) {
		t.Error("the log holds a payload")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run() = %v", err)
	}
	if n := strings.Count(out.String(), `"handler listening"`); n != 1 {
		t.Errorf("the handler started %d times", n)
	}
}

// waitReady waits until the handler answers GET /, or stops.
func waitReady(t *testing.T, base string, done <-chan error) {
	t.Helper()
	var err error
	poll.Within(10*time.Second, func() bool {
		var res *http.Response
		if res, err = http.Get(base + "/"); err == nil {
			res.Body.Close()
			return true
		}
		select {
		case rerr := <-done:
			t.Fatalf("handler stopped before answering GET /: %v", rerr)
		default:
		}
		return false
	})
	if err != nil {
		t.Fatalf("handler never answered GET /: %v", err)
	}
}

// post sends an invocation as the host does and returns the status and body.
func post(t *testing.T, url, invocationID, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Azure-Functions-InvocationId", invocationID)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer res.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, res.Body)
	return res.StatusCode, b.String()
}
