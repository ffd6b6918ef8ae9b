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
func TestE2E_Reconcile(t *testing.T) {
	const settle = 2 * time.Second
	t.Parallel()
	for _, tc := range []string{"all through offpath", "second door", "rows deleted"} {
		t.Run(tc, func(t *testing.T) {
			t.Parallel()
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

			want := map[string][2]int64{} // deployment → Azure minus ledger (prompt, completion)
			switch tc {
			case "second door":
				direct := openai.NewClient(option.WithBaseURL(s.SimURL+"/openai/v1/"), option.WithAPIKey(aoaisim.DefaultKey),
					option.WithMaxRetries(0), option.WithHTTPClient(s.SimClient))
				var d [2]int64
				for i := range 5 {
					r, err := direct.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: chatDep, MaxTokens: openai.Int(40),
						Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("Summarise incident %d: the VPN dropped twice overnight.", i))}})
					if err != nil {
						t.Fatal(err)
					}
					d[0] += r.Usage.PromptTokens
					d[1] += r.Usage.CompletionTokens
				}
				want[chatDep] = d
			case "rows deleted":
				want = deleteAttempt(t, s, "contoso/doc-1.txt")
			}
			end := time.Now()

			// The traffic's minute is final once it has ended and settled
			// (OFFPATH_RECONCILE_SETTLE); from then on, fire the timer until
			// its watermark has passed that minute (each firing waits for
			// its invocation to end).
			final := end.Truncate(time.Minute).Add(time.Minute + settle)
			wm := tablestore.NewWatermark(s.Tables, "", "reconcile")
			poll.Until(t, 3*time.Minute, "the watermark past the traffic's minute", func() bool {
				if time.Now().Before(final) {
					return false
				}
				fireReconcile(t, s)
				next, _, err := wm.Load(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				return next.After(end.Truncate(time.Minute))
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
				if tc == "second door" && (num(a, "ledger_prompt_tokens") == 0 || a.Fields["likely_cause"] == nil) {
					t.Errorf("alert %+v: want the ledger's figures (offpath's own calls) beside Azure's and the likely cause", a)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("ledger_drift (Azure minus ledger, prompt and completion, per deployment) = %v, want %v; alerts %+v", got, want, s.Alerts())
			}
			t.Logf("%s: drift %v", tc, got)
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
