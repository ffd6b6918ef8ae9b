package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/poll"
)

// TestE2E_InfrastructureFailures: with every model call failing, a
// document's message is retried and ends in the dead-letter queue after
// MaxDeliveryCount, its last delivery recording it dead_lettered, unmetered
// and without a result; the operator's reprocess (the CLI, through the
// admin route) brings it to done exactly once, metered once. With 30% of
// calls failing, every document ends done, each metered exactly once,
// however many deliveries it took.
func TestE2E_InfrastructureFailures(t *testing.T) {
	t.Parallel()
	const maxDelivery = 5
	s := newStack(t, stackOptions{
		maxDelivery: maxDelivery,
		sim:         func(c *aoaisim.Config) { c.Faults = []aoaisim.FaultRule{{ErrorRate: 1}} },
		settings:    map[string]string{"OFFPATH_AOAI_MAX_ATTEMPTS": "2"},
	})
	ctx := context.Background()
	name := "acme/doomed.txt"
	etag := s.mustUpload(name, prose(3000))
	poll.Until(t, 60*time.Second, "the dead letter", func() bool { return s.deadLettered("doc-ingest") == 1 })
	letters, err := s.broker.DeadLetters(ctx, "doc-ingest", 10)
	if err != nil || len(letters) != 1 || letters[0].DeadLetterReason != "MaxDeliveryCountExceeded" || letters[0].DeliveryCount < maxDelivery {
		t.Fatalf("dead letters = %+v, %v", letters, err)
	}
	st := s.final("acme", name, etag, 30*time.Second)
	if st.State != document.DeadLettered || st.Deliveries != maxDelivery || !strings.Contains(st.Reason, "HTTP 5") {
		t.Errorf("status = %+v; want dead_lettered after %d deliveries with the last error", st, maxDelivery)
	}
	if rows := s.usage("acme", name, etag); len(rows) != 0 {
		t.Errorf("ledger rows %+v for a document never processed", rows)
	}
	if _, _, err := s.results.Read(ctx, name+".jsonl"); err == nil {
		t.Error("a result exists for a document never processed")
	}
	if out, err := s.offpath("documents", "list", "-admin", "-state", "dead_lettered"); err != nil || !strings.Contains(out, name) {
		t.Errorf("offpath documents list -admin -state dead_lettered: %v\n%s", err, out)
	}

	// The service is back: the operator reprocesses the dead-lettered
	// document through the API; its blob is written anew and enqueued.
	if err := s.sim.SetFaults(nil); err != nil {
		t.Fatal(err)
	}
	out, err := s.offpath("documents", "reprocess", name, "-json")
	if err != nil {
		t.Fatalf("offpath documents reprocess: %v\n%s", err, out)
	}
	var queued document.Status
	if err := json.Unmarshal([]byte(out), &queued); err != nil || queued.State != document.Queued || queued.ETag == "" || queued.SameVersion(etag) {
		t.Fatalf("reprocess -json = %+v, %v\n%s; want queued for a new version", queued, err, out)
	}
	done := s.final("acme", name, queued.ETag, 30*time.Second)
	if done.State != document.Done || done.Deliveries != 1 {
		t.Errorf("after reprocess: %+v, want done on the new message's first delivery", done)
	}
	// Metered once: one finished row per deployment, holding the status's
	// usage, and nothing under the dead-lettered version.
	var prompt int64
	rows := s.usage("acme", name, queued.ETag)
	for _, r := range rows {
		if r.Unfinished {
			t.Errorf("an unfinished row %+v after a first delivery that finished", r)
		}
		prompt += r.PromptTokens
	}
	if len(rows) != 2 || prompt != done.Usage.PromptTokens || prompt == 0 {
		t.Errorf("ledger rows %+v for status usage %+v: want each deployment metered once", rows, done.Usage)
	}
	if rows := s.usage("acme", name, etag); len(rows) != 0 {
		t.Errorf("rows %+v under the dead-lettered version", rows)
	}
	if lines := s.result(name); len(lines) != done.Chunks+1 {
		t.Errorf("result has %d lines for %d chunks", len(lines), done.Chunks)
	}
	// A second reprocess is refused: the document is done, not dead-lettered.
	if out, err := s.offpath("documents", "reprocess", name); err == nil || !strings.Contains(out, "not_dead_lettered") {
		t.Errorf("a second reprocess: %v\n%s", err, out)
	}
	if out, err := s.offpath("documents", "status", name, "-admin"); err != nil || !strings.Contains(out, "done") || !strings.Contains(out, "model calls") {
		t.Errorf("offpath documents status: %v\n%s", err, out)
	}
	if st, err := s.docs.Get(ctx, "acme", name); err != nil || st.ETag != done.ETag || st.State != document.Done {
		t.Errorf("status at the end = %+v, %v; want done once, for the reprocessed version", st, err)
	}

	// 30% of calls fail: retries in process and redeliveries get every
	// document through, each metered once.
	if err := s.sim.SetFaults([]aoaisim.FaultRule{{ErrorRate: 0.3}}); err != nil {
		t.Fatal(err)
	}
	const docs = 10
	etags := map[string]string{}
	for i := range docs {
		n := fmt.Sprintf("acme/flaky/%02d.txt", i)
		etags[n] = s.mustUpload(n, prose(3000+100*i))
	}
	redelivered := 0
	for n, e := range etags {
		st := s.final("acme", n, e, 90*time.Second)
		if st.State != document.Done {
			t.Errorf("%s: %+v, want done", n, st)
			continue
		}
		if st.Deliveries > 1 {
			redelivered++
		}
		// The delivery that finished has one finished row per deployment,
		// holding the status's usage; a delivery that spent tokens before it
		// failed keeps its own rows, unfinished (abandoned, billed apart).
		var finished []ledger.Entry
		var prompt int64
		for _, r := range s.usage("acme", n, e) {
			if r.Unfinished {
				if strings.HasSuffix(r.Unit, "#"+strconv.Itoa(st.Deliveries)) {
					t.Errorf("%s: the finishing delivery's row %+v is unfinished", n, r)
				}
				continue
			}
			finished = append(finished, r)
			prompt += r.PromptTokens
		}
		if len(finished) != 2 || prompt != st.Usage.PromptTokens {
			t.Errorf("%s: finished ledger rows %+v for status usage %+v: want each deployment metered once by the finishing delivery", n, finished, st.Usage)
		}
	}
	t.Logf("30%% failures: %d injected errors, %d of %d documents needed a redelivery", s.sim.Stats().FaultErrors, redelivered, docs)
	if dead := s.deadLettered("doc-ingest"); dead != 1 {
		t.Errorf("%d dead letters, want only the first document's", dead)
	}
}

// TestE2E_429Storm: many documents against a chat deployment with a small
// TPM and no client-side limiter (the worst case): the 429s are waited out
// in process, every document ends done after a single delivery, and no
// message is abandoned because of a 429. The simulator's rate-limit minute
// lasts a quarter of a real one (its 429s ask for the real wait), still
// three times the messages' lock duration, so that a wait can outlast a lock.
func TestE2E_429Storm(t *testing.T) {
	t.Parallel()
	const tpm = 6000
	s := newStack(t, stackOptions{
		functionTimeout: "00:03:00",
		sim: func(c *aoaisim.Config) {
			c.DisableRateLimits = false
			c.Deployments[0].TPM = tpm // gpt-4o-mini; RPM follows (6 per 1,000 TPM)
			c.RateClock = aoaisim.NewClock(time.Now(), 4)
			c.RealRetryAfter = true
		},
	})
	const docs = 24 // about 375 tokens charged each: one and a half (simulated) minutes' worth
	etags := map[string]string{}
	for i := range docs {
		n := fmt.Sprintf("acme/storm/%02d.txt", i)
		etags[n] = s.mustUpload(n, prose(150+5*i))
	}
	for n, e := range etags {
		st := s.final("acme", n, e, 150*time.Second)
		if st.State != document.Done || st.Deliveries != 1 {
			t.Errorf("%s: %+v, want done on the first delivery", n, st)
		}
	}
	chat := s.simStats("gpt-4o-mini")
	t.Logf("429 storm: %d documents, chat TPM %d: the simulator answered %d requests and sent %d 429s", docs, tpm, chat.Requests, chat.Throttled)
	if chat.Throttled == 0 {
		t.Error("no 429s: the scenario did not storm")
	}
	if dead := s.deadLettered("doc-ingest"); dead != 0 {
		t.Errorf("%d dead letters", dead)
	}
}

// TestE2E_CrashRedelivery: the handler is killed while it processes a
// document; the message's lock is released, Service Bus redelivers it, and
// the document ends done once, metered once.
func TestE2E_CrashRedelivery(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{
		sim: func(c *aoaisim.Config) {
			c.Faults = []aoaisim.FaultRule{{Route: "embeddings", Latency: aoaisim.Duration(3 * time.Second)}}
		},
	})
	name := "acme/crash.txt"
	etag := s.mustUpload(name, prose(40<<10))
	poll.Until(t, 30*time.Second, "the first embeddings request", func() bool {
		return s.sim.Stats().Routes[aoaisim.RouteEmbeddings] >= 1
	})
	s.killHandler()
	if err := s.sim.SetFaults(nil); err != nil {
		t.Fatal(err)
	}
	st := s.final("acme", name, etag, 60*time.Second)
	if st.State != document.Done || st.Deliveries < 2 {
		t.Fatalf("status = %+v, want done on a redelivery", st)
	}
	rows := s.usage("acme", name, etag)
	var prompt int64
	for _, r := range rows {
		prompt += r.PromptTokens
	}
	if len(rows) != 2 || prompt != st.Usage.PromptTokens {
		t.Errorf("ledger rows %+v, status usage %+v: want the document metered once", rows, st.Usage)
	}
	if lines := s.result(name); len(lines) != st.Chunks+1 {
		t.Errorf("result has %d lines for %d chunks", len(lines), st.Chunks)
	}
	if !strings.Contains(s.out.String(), "handler exited") {
		t.Error("the dev host did not see the handler die")
	}
	_, metered, _ := s.servedAndMetered()
	if d := s.streamMismatch("acme", metered); d != "" {
		t.Errorf("token metrics stream ≠ ledger: %s", d)
	}
}
