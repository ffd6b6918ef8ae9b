package batch_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/apptest"
	"github.com/offpath/offpath/internal/testing/poll"
)

const (
	corpusDocs = 50_000
	// refuseEvery puts the simulator's content-filter phrase in one
	// document in this many, so that refusals are metered too.
	refuseEvery = 997
)

// TestEndToEnd_RescoreCancelledHalfWay re-scores a 50,000-document corpus
// after a prompt change (input_blob and a new system_prompt) and cancels it
// while Azure runs it: the lines Azure ran are harvested and billed, the
// rest are reported cancelled, every document once; the job's usage, the
// ledger and the per-line usage of the results agree exactly, and cost the
// catalog's price. Another tenant can neither cancel nor see the job.
func TestEndToEnd_RescoreCancelledHalfWay(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	// 600 × 50 lines a simulated minute: 500 lines a second, so the corpus
	// would take 100 s, far longer than the test waits for the cancel to
	// take effect even on a loaded machine; validation takes 0.2 s.
	sim := simConfig(600, aoaisim.Deployment{Name: batchDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18",
		Type: aoaisim.TypeGlobalBatch, BatchLinesPerMinute: 50})
	s := apptest.Start(t, apptest.Config{Sim: sim})
	ctx := context.Background()

	const blob = "contoso/rescore/corpus.jsonl"
	start := time.Now()
	uploadCorpus(t, s, blob)
	uploaded := time.Now()
	var j jobJSON
	body := map[string]any{"alias": "summarize", "input_blob": blob, "max_tokens": 16,
		"system_prompt": "Score the document from 1 to 5 for relevance to network outages. Answer with the score only."}
	if st := s.Do(http.MethodPost, "/api/v1/batches", "contoso", body, &j); st != http.StatusAccepted {
		t.Fatalf("submit: %d", st)
	}
	if j.Items != corpusDocs {
		t.Fatalf("job has %d items, want %d", j.Items, corpusDocs)
	}
	accepted := time.Now()

	// Cancel once Azure has run some lines, far from all.
	var view struct {
		jobJSON
		RequestCounts struct {
			Completed int `json:"completed"`
		} `json:"request_counts"`
	}
	if !poll.Within(90*time.Second, func() bool {
		s.Do(http.MethodGet, "/api/v1/batches/"+j.ID, "contoso", nil, &view)
		if view.RequestCounts.Completed >= 1000 {
			return true
		}
		if view.State != batch.Accepted && view.State != batch.Held && view.State != batch.Submitted {
			t.Fatalf("job reached %s before the test could cancel it", view.State)
		}
		return false
	}) {
		t.Fatalf("Azure did not run 1,000 lines within 90 s: %+v", view)
	}
	if st := s.Do(http.MethodPost, "/api/v1/batches/"+j.ID+"/cancel", "fabrikam", nil, nil); st != http.StatusNotFound {
		t.Errorf("another tenant's cancel: %d, want 404", st)
	}
	var cancelled jobJSON
	if st := s.Do(http.MethodPost, "/api/v1/batches/"+j.ID+"/cancel", "contoso", nil, &cancelled); st != http.StatusAccepted {
		t.Fatalf("cancel: %d", st)
	}
	cancelledAt := time.Now()
	t.Logf("cancelled with %d of %d lines run", view.RequestCounts.Completed, corpusDocs)
	if st := s.Do(http.MethodPost, "/api/v1/batches/"+j.ID+"/cancel", "contoso", nil, nil); st != http.StatusAccepted {
		t.Errorf("second cancel while cancelling: %d, want 202", st)
	}

	if !poll.Within(90*time.Second, func() bool {
		s.Do(http.MethodGet, "/api/v1/batches/"+j.ID, "contoso", nil, &j)
		return j.State == batch.Harvested
	}) {
		t.Fatalf("not harvested within 90 s of the cancel: %s", j.State)
	}
	harvestedAt := time.Now()
	if j.Final != batch.Cancelled {
		t.Errorf("final state %s, want cancelled", j.Final)
	}
	if st := s.Do(http.MethodPost, "/api/v1/batches/"+j.ID+"/cancel", "contoso", nil, nil); st != http.StatusConflict {
		t.Errorf("cancel after the harvest: %d, want 409", st)
	}

	// Every document exactly once; the usage of the lines Azure ran.
	got, sum := readResults(t, s, j.ID)
	t.Logf("outcomes %v; upload %v, submit %v, to the cancel %v, to the harvest %v, results read in %v",
		got, uploaded.Sub(start).Round(time.Millisecond), accepted.Sub(uploaded).Round(time.Millisecond), cancelledAt.Sub(accepted).Round(time.Millisecond),
		harvestedAt.Sub(cancelledAt).Round(time.Millisecond), time.Since(harvestedAt).Round(time.Millisecond))
	if got[batch.OK] == 0 || got[batch.CancelledOutcome] == 0 || got[batch.FailedOutcome] != 0 || got[batch.ExpiredOutcome] != 0 {
		t.Errorf("outcomes %v, want some ok, some cancelled, none failed or expired", got)
	}
	if total := got[batch.OK] + got[batch.Refused] + got[batch.CancelledOutcome]; total != corpusDocs {
		t.Errorf("%d outcomes, want %d", total, corpusDocs)
	}
	if want := (batch.Counts{OK: int64(got[batch.OK]), Refused: int64(got[batch.Refused]), Cancelled: int64(got[batch.CancelledOutcome])}); j.Outcomes != want {
		t.Errorf("job outcomes %+v, want the results' %+v", j.Outcomes, want)
	}
	var azureRan int
	for _, b := range s.Sim.State().Batches {
		azureRan += b.Completed + b.Failed
	}
	if azureRan != got[batch.OK]+got[batch.Refused] {
		t.Errorf("the simulator ran %d lines; the results have %d answered or refused", azureRan, got[batch.OK]+got[batch.Refused])
	}

	// The job, the ledger and the results agree, at the catalog's price.
	entries, err := s.Ledger.Month(ctx, "contoso", ledger.MonthOf(j.Created))
	if err != nil {
		t.Fatal(err)
	}
	var led ledger.Usage
	for _, e := range entries {
		if e.Path != ledger.Batch || e.Alias != "summarize" || e.Deployment != batchDep {
			t.Errorf("ledger row %+v, want the batch path, summarize on %s", e, batchDep)
		}
		led.PromptTokens += e.PromptTokens
		led.CompletionTokens += e.CompletionTokens
		led.CachedTokens += e.CachedTokens
		led.ReasoningTokens += e.ReasoningTokens
		led.Requests += e.Requests
		led.Refusals += e.Refusals
		led.Cost += e.Cost
	}
	price, err := s.Catalog.Price("summarize", catalog.Batch, batchDep)
	if err != nil {
		t.Fatal(err)
	}
	sum.Cost = price.Cost(sum.PromptTokens, sum.CachedTokens, sum.CompletionTokens)
	fromJob := ledger.Usage{PromptTokens: j.Usage.PromptTokens, CompletionTokens: j.Usage.CompletionTokens, CachedTokens: j.Usage.CachedTokens,
		ReasoningTokens: j.Usage.ReasoningTokens, Requests: j.Usage.Requests, Refusals: j.Usage.Refusals, Cost: sum.Cost}
	if len(entries) != 1 || led != sum || fromJob != sum {
		t.Errorf("usage disagrees:\n results %+v\n ledger  %+v (%d rows)\n job     %+v", sum, led, len(entries), j.Usage)
	}
	if j.Usage.Cost.Dollars() != sum.Cost.Dollars() {
		t.Errorf("job cost $%s, want $%s", j.Usage.Cost.Dollars(), sum.Cost.Dollars())
	}
	// The catalog's batch price of gpt-4o-mini, $0.075 in and $0.30 out
	// per million tokens, to the nano-dollar.
	want := float64(sum.PromptTokens-sum.CachedTokens)*0.075 + float64(sum.CachedTokens)*0.0375 + float64(sum.CompletionTokens)*0.3
	if math.Abs(float64(sum.Cost)-want*1000) > 3 {
		t.Errorf("cost %d nano-dollars, want about %.0f", sum.Cost, want*1000)
	}
	if sum.Requests == 0 || sum.CompletionTokens == 0 {
		t.Errorf("nothing billed for the lines Azure ran: %+v", sum)
	}

	// Another tenant sees nothing of it.
	for _, path := range []string{"/api/v1/batches/" + j.ID, "/api/v1/batches/" + j.ID + "/results"} {
		if st := s.Do(http.MethodGet, path, "fabrikam", nil, nil); st != http.StatusNotFound {
			t.Errorf("fabrikam GET %s: %d, want 404", path, st)
		}
	}
	var list struct {
		Data []jobJSON `json:"data"`
	}
	if s.Do(http.MethodGet, "/api/v1/batches", "fabrikam", nil, &list); len(list.Data) != 0 {
		t.Errorf("fabrikam lists %d jobs, want none", len(list.Data))
	}
	var usage ledger.ReportView
	if s.Do(http.MethodGet, "/api/v1/usage", "fabrikam", nil, &usage); usage.Total.TotalTokens != 0 {
		t.Errorf("fabrikam's usage %+v, want none", usage.Total)
	}
}

// uploadCorpus streams the corpus into the tenant's area of the uploads
// container, as a tenant's own upload would, without holding it in memory.
func uploadCorpus(t *testing.T, s *apptest.Stack, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Blobs.CreateContainer(ctx, batch.DefaultUploadsContainer, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriterSize(pw, 64<<10)
		enc := json.NewEncoder(bw)
		for i := range corpusDocs {
			prompt := fmt.Sprintf("Doc %d: the VPN drops every %d minutes on floor %d.", i, 5+i%55, i%9)
			if i%refuseEvery == refuseEvery-1 {
				prompt += " " + aoaisim.DefaultPromptTrigger
			}
			if err := enc.Encode(batch.Item{ID: fmt.Sprintf("doc-%05d", i), Prompt: prompt}); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(bw.Flush())
	}()
	if _, err := s.Blobs.UploadStream(ctx, batch.DefaultUploadsContainer, name, pr, nil); err != nil {
		t.Fatalf("upload the corpus: %v", err)
	}
}

// readResults streams the job's results and returns the count per outcome
// and the sum of the per-line usage (a request per line Azure ran). It
// fails the test on a line for an unknown or repeated document.
func readResults(t *testing.T, s *apptest.Stack, id string) (map[batch.Outcome]int, ledger.Usage) {
	t.Helper()
	res := s.Call(http.MethodGet, "/api/v1/batches/"+id+"/results", "contoso", nil)
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Offpath-Results-Complete") != "true" {
		t.Fatalf("results: %d, complete %q", res.StatusCode, res.Header.Get("Offpath-Results-Complete"))
	}
	seen := make([]bool, corpusDocs)
	got := map[batch.Outcome]int{}
	var sum ledger.Usage
	dec := json.NewDecoder(bufio.NewReaderSize(res.Body, 64<<10))
	for {
		var l batch.ResultLine
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("results line %d: %v", sumCounts(got)+1, err)
		}
		var n int
		if _, err := fmt.Sscanf(l.ItemID, "doc-%05d", &n); err != nil || n < 0 || n >= corpusDocs || seen[n] {
			t.Fatalf("result for item %q: unknown or repeated", l.ItemID)
		}
		seen[n] = true
		got[l.Outcome]++
		if l.Outcome == batch.OK || l.Outcome == batch.Refused {
			sum.Requests++
		}
		if l.Outcome == batch.Refused {
			sum.Refusals++
		}
		if l.Outcome == batch.OK && l.Answer == "" {
			t.Errorf("item %s: ok without an answer", l.ItemID)
		}
		if l.Usage != nil {
			sum.PromptTokens += l.Usage.PromptTokens
			sum.CompletionTokens += l.Usage.CompletionTokens
			sum.CachedTokens += l.Usage.CachedTokens
			sum.ReasoningTokens += l.Usage.ReasoningTokens
		}
	}
	if n := sumCounts(got); n != corpusDocs {
		t.Errorf("%d result lines, want %d", n, corpusDocs)
	}
	return got, sum
}

func sumCounts(m map[batch.Outcome]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
