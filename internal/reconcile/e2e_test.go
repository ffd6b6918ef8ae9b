package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/offpath/offpath/internal/alert"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/devhost"
	"github.com/offpath/offpath/internal/reconcile"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/testing/apptest"
	"github.com/offpath/offpath/internal/testing/poll"
)

// TestE2E_Reconcile runs the reconcile timer of the real handler behind
// the dev host against the simulator as it would run against Azure: the
// simulator over TLS, trusted through SSL_CERT_FILE; Azure Monitor's token
// reached with the handler's managed identity credential from App
// Service's identity endpoint (IDENTITY_ENDPOINT, IDENTITY_HEADER), which
// the simulator plays; a period of a minute (OFFPATH_RECONCILE_PERIOD) so
// that the test need not wait an hour. Documents go through the queue
// path; then the timer is fired until its watermark has passed their
// minute. With every call through offpath there is no drift; with calls
// made straight to the simulator's chat deployment, ledger_drift names it
// with both figures, Azure's larger by exactly those calls' tokens; with a
// document's attempt rows deleted from the ledger, ledger_drift says the
// exact tokens missing, per deployment.
//
// Each case has its own stack. The traffic of all three is sent first and
// the test then waits once for the last traffic's minute to be final,
// rather than once per case: a minute's wait is most of the test's time.
func TestE2E_Reconcile(t *testing.T) {
	const settle = 2 * time.Second
	t.Parallel()
	type run struct {
		name string
		s    *apptest.Stack
		want map[string][2]int64 // deployment → Azure minus ledger (prompt, completion)
		end  time.Time
	}
	var runs []*run
	for _, tc := range []string{"all through offpath", "second door", "rows deleted"} {
		s := apptest.Start(t, apptest.Config{
			Tenants: map[string][]string{"contoso": {"ingest"}},
			Settings: map[string]string{
				"OFFPATH_AOAI_RESOURCE_ID":     resource,
				"OFFPATH_RECONCILE_PERIOD":     "1m",
				"OFFPATH_RECONCILE_SETTLE":     settle.String(),
				"OFFPATH_RECONCILE_MIN_TOKENS": "20",
			},
		})
		// The first run has no watermark: it compares the minute before
		// and sets the watermark to the current one, before any traffic.
		fireReconcile(t, s)
		sendDocuments(t, s, 3)

		r := &run{name: tc, s: s, want: map[string][2]int64{}}
		switch tc {
		case "second door":
			direct := openai.NewClient(option.WithBaseURL(s.SimURL+"/openai/v1/"), option.WithAPIKey(aoaisim.DefaultKey),
				option.WithMaxRetries(0), option.WithHTTPClient(s.SimClient))
			var d [2]int64
			for i := range 5 {
				res, err := direct.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: chatDep, MaxTokens: openai.Int(40),
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("Summarise incident %d: the VPN dropped twice overnight.", i))}})
				if err != nil {
					t.Fatalf("%s: %v", tc, err)
				}
				d[0] += res.Usage.PromptTokens
				d[1] += res.Usage.CompletionTokens
			}
			r.want[chatDep] = d
		case "rows deleted":
			r.want = deleteAttempt(t, s, "contoso/doc-1.txt")
		}
		r.end = time.Now()
		runs = append(runs, r)
	}

	// A traffic's minute is final once it has ended and settled
	// (OFFPATH_RECONCILE_SETTLE): wait for the last one's; from then on,
	// fire each stack's timer until its watermark has passed its traffic's
	// minute (each firing waits for its invocation to end).
	final := runs[len(runs)-1].end.Truncate(time.Minute).Add(time.Minute + settle)
	poll.Until(t, 3*time.Minute, "the traffic's minutes final", func() bool { return !time.Now().Before(final) })
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			s := r.s
			wm := tablestore.NewWatermark(s.Tables, "", "reconcile")
			poll.Until(t, time.Minute, "the watermark past the traffic's minute", func() bool {
				fireReconcile(t, s)
				next, _, err := wm.Load(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				return next.After(r.end.Truncate(time.Minute))
			})

			got := map[string][2]int64{}
			for _, a := range s.Alerts() {
				if a.Name != reconcile.AlertDrift {
					continue
				}
				d := fmt.Sprint(a.Fields["deployment"])
				diff := func(k string) int64 { return num(a, "azure_"+k+"_tokens") - num(a, "ledger_"+k+"_tokens") }
				g := got[d]
				got[d] = [2]int64{g[0] + diff("prompt"), g[1] + diff("completion")}
				if r.name == "second door" && (num(a, "ledger_prompt_tokens") == 0 || a.Fields["likely_cause"] == nil) {
					t.Errorf("alert %+v: want the ledger's figures (offpath's own calls) beside Azure's and the likely cause", a)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(r.want) {
				t.Errorf("ledger_drift (Azure minus ledger, prompt and completion, per deployment) = %v, want %v; alerts %+v", got, r.want, s.Alerts())
			}
			t.Logf("%s: drift %v", r.name, got)
		})
	}
}

// fireReconcile fires the reconcile timer through the dev host, waits for
// the invocation to end and fails the test if it failed.
func fireReconcile(t *testing.T, s *apptest.Stack) {
	t.Helper()
	n := s.Host.Finished("reconcile")
	s.FireAndWait("reconcile")
	var last devhost.Event
	for _, e := range s.Host.Events() {
		if e.Kind == devhost.Invoked && e.Function == "reconcile" {
			last = e
		}
	}
	if s.Host.Finished("reconcile") <= n || last.Outcome != "succeeded" {
		t.Fatalf("the reconcile invocation: %+v\n%s", last, s.Output())
	}
}

// sendDocuments drops n documents of contoso's into incoming, whence the
// blob trigger sends their claim checks to the queue path, and waits until
// every one is settled.
func sendDocuments(t *testing.T, s *apptest.Stack, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Blobs.CreateContainer(ctx, "incoming", nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		t.Fatal(err)
	}
	for i := range n {
		text := strings.Repeat(fmt.Sprintf("Incident %d: the printer on floor %d prints blank pages since the update. ", i, i+2), 30)
		if _, err := s.Blobs.UploadBuffer(ctx, "incoming", fmt.Sprintf("contoso/doc-%d.txt", i), []byte(text), nil); err != nil {
			t.Fatal(err)
		}
	}
	settled := map[string]bool{}
	s.Wait("every claim check settled", func(e devhost.Event) bool {
		if e.Kind == devhost.Settled && strings.HasPrefix(e.Queue, "doc-ingest") && e.Outcome == "completed" {
			settled[e.MessageID] = true
		}
		return len(settled) == n
	})
}

// deleteAttempt deletes from the ledger the rows of the attempt that
// processed document name (as a lost write would) and returns their
// tokens per deployment.
func deleteAttempt(t *testing.T, s *apptest.Stack, name string) map[string][2]int64 {
	t.Helper()
	ctx := context.Background()
	m := ledger.MonthOf(time.Now())
	rows, err := s.Ledger.Month(ctx, "contoso", m)
	if err != nil {
		t.Fatal(err)
	}
	table := s.Tables.NewClient(tablestore.DefaultLedgerTable)
	out := map[string][2]int64{}
	for _, e := range rows {
		if !strings.HasPrefix(e.Unit, "ingest:"+name+"@") {
			continue
		}
		if _, err := table.DeleteEntity(ctx, tablestore.Partition(e.Tenant, e.Month), e.Key(), &aztables.DeleteEntityOptions{}); err != nil {
			t.Fatal(err)
		}
		o := out[e.Deployment]
		out[e.Deployment] = [2]int64{o[0] + e.PromptTokens, o[1] + e.CompletionTokens}
	}
	if len(out) == 0 {
		t.Fatalf("no ledger rows of %s among %+v", name, rows)
	}
	return out
}

// num is an alert's numeric field (JSON numbers decode as float64).
func num(a alert.Alert, k string) int64 {
	f, _ := a.Fields[k].(float64)
	return int64(f)
}
