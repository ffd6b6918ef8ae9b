package ingest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/outcome"
)

type resultLine struct {
	Kind           string
	ID             string
	DocumentID     string `json:"document_id"`
	Tenant, Path   string
	URL, ETag      string
	CorrelationID  string `json:"correlation_id"`
	Chunk          int
	Offset         int64
	Tokens         int
	Overlap        int
	Text           string
	Vector         []float64
	Chunks         int
	Summary        string
	Keywords       []string
	SummaryRefused *struct{ Stage string } `json:"summary_refused"`
}

func readResult(t *testing.T, b []byte) []resultLine {
	t.Helper()
	var out []resultLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l resultLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("result line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

func TestProcess_Done(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOptions{})
	doc := prose(20 << 10)
	claim := f.drop(t, "acme/kb/article.txt", doc)
	if claim.Queue != "doc-ingest" || claim.Message.Tenant != "acme" || claim.Message.ModelAlias != "ingest" {
		t.Fatalf("claim = %+v", claim)
	}
	st, err := f.deliver(claim.Body, 1)
	if err != nil {
		t.Fatalf("Process = %v", err)
	}
	if st.State != document.Done || st.Chunks < 10 || st.Result != "ingested/acme/kb/article.txt.jsonl" || st.Deliveries != 1 || st.Duration() <= 0 {
		t.Errorf("status = %+v", st)
	}
	raw, md, ok := f.blobs.result("acme/kb/article.txt.jsonl")
	if !ok || md["offpath_etag"] != claim.Message.ETag || md["offpath_state"] != "done" {
		t.Fatalf("result %v, metadata %v", ok, md)
	}
	lines := readResult(t, raw)
	head := lines[0]
	if head.Kind != "document" || head.Summary == "" || len(head.Keywords) == 0 || head.Chunks != st.Chunks || head.Tenant != "acme" || head.Path != "kb/article.txt" {
		t.Errorf("document line = %+v", head)
	}
	var text strings.Builder
	for i, l := range lines[1:] {
		if l.Kind != "chunk" || l.Chunk != i || len(l.Vector) != 16 || l.DocumentID != head.DocumentID || l.ID != head.DocumentID+"-"+itoa(i) ||
			l.ETag != claim.Message.ETag || l.CorrelationID != claim.Message.CorrelationID || l.Tokens > 512 {
			t.Fatalf("chunk line %d = %+v", i, l)
		}
		text.WriteString(l.Text[l.Overlap:])
	}
	if len(lines)-1 != st.Chunks || !strings.Contains(text.String(), "Sentence 1 tells") {
		t.Errorf("%d chunk lines for %d chunks", len(lines)-1, st.Chunks)
	}
	// Metered exactly from the responses: one row per deployment.
	emb, chat := f.simStats("text-embedding-3-small"), f.simStats("gpt-4o-mini")
	rows := map[string]ledger.Entry{}
	for _, e := range f.ledger.entries() {
		rows[e.Deployment] = e
	}
	if len(rows) != 2 || rows["text-embedding-3-small"].PromptTokens != emb.PromptTokens ||
		rows["gpt-4o-mini"].PromptTokens != chat.PromptTokens || rows["gpt-4o-mini"].CompletionTokens != chat.CompletionTokens ||
		rows["gpt-4o-mini"].Requests != 1 || rows["gpt-4o-mini"].Cost == 0 || rows["gpt-4o-mini"].Path != ledger.Queue || rows["gpt-4o-mini"].Alias != "ingest" {
		t.Errorf("ledger = %+v; simulator embeddings %+v chat %+v", rows, emb, chat)
	}
	if st.Usage.PromptTokens != emb.PromptTokens+chat.PromptTokens || st.Usage.Requests != emb.Requests+chat.Requests {
		t.Errorf("status usage = %+v", st.Usage)
	}

	// A redelivery of the same version does nothing and meters nothing.
	batches, requests := f.ledger.batches, emb.Requests+chat.Requests
	again, err := f.deliver(claim.Body, 2)
	if err != nil || again.State != document.Done || f.ledger.batches != batches ||
		f.simStats("text-embedding-3-small").Requests+f.simStats("gpt-4o-mini").Requests != requests {
		t.Errorf("redelivery: %+v, %v; ledger writes %d → %d", again.State, err, batches, f.ledger.batches)
	}
	// The enqueue trigger firing again for the same version sends nothing.
	if c, err := f.enq.Enqueue(context.Background(), "acme/kb/article.txt", false); err != nil || c.Queue != "" {
		t.Errorf("duplicate enqueue = %+v, %v; want nothing to send", c, err)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestProcess_SummaryRefusedIsAResult(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOptions{})
	for _, tc := range []struct{ trigger, stage string }{
		{aoaisim.DefaultPromptTrigger, ingest.StagePrompt},         // HTTP 400 content_filter
		{aoaisim.DefaultCompletionTrigger, ingest.StageCompletion}, // 200, finish_reason content_filter
	} {
		name := "acme/refused-" + tc.stage + ".md"
		claim := f.drop(t, name, append(prose(3000), []byte("\n\n"+tc.trigger+"\n")...))
		st, err := f.deliver(claim.Body, 1)
		if outcome.Of(err) != outcome.Refused || st.State != document.Refused || !strings.Contains(st.Reason, "content_filter") {
			t.Fatalf("%s: Process = %+v, %v; want refused", tc.stage, st, err)
		}
		raw, md, ok := f.blobs.result(name + ".jsonl")
		if !ok || md["offpath_state"] != "refused" {
			t.Fatalf("%s: no result (%v)", tc.stage, md)
		}
		lines := readResult(t, raw)
		if lines[0].SummaryRefused == nil || lines[0].SummaryRefused.Stage != tc.stage || lines[0].Summary != "" || len(lines) < 2 {
			t.Errorf("%s: the chunks must be indexed without a summary: %+v (%d lines)", tc.stage, lines[0], len(lines))
		}
		var chat ledger.Entry
		for _, e := range f.ledger.entries() {
			if e.Deployment == "gpt-4o-mini" && strings.Contains(e.Unit, name) {
				chat = e
			}
		}
		if chat.Refusals != 1 || chat.Requests != 1 || (tc.stage == ingest.StageCompletion && chat.PromptTokens == 0) {
			t.Errorf("%s: chat ledger row = %+v, want the refusal metered", tc.stage, chat)
		}
	}
}

// refusingModels refuses every embedding.
type refusingModels struct{ ingest.Models }

func (refusingModels) Embed(context.Context, string, []string) (ingest.Embeddings, error) {
	r := &ingest.Refusal{Stage: ingest.StagePrompt, Categories: []string{"hate"}}
	return ingest.Embeddings{Usage: ledger.Usage{PromptTokens: 10}, Trace: ingest.Trace{Requests: 1, Attempts: 1}},
		&outcome.Error{Kind: outcome.Refused, Reason: "content_filter: prompt", Err: r}
}

func TestProcess_EmbeddingRefusedWritesNoResult(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOptions{models: func(m ingest.Models) ingest.Models { return refusingModels{m} }})
	claim := f.drop(t, "acme/a.txt", prose(2000))
	st, err := f.deliver(claim.Body, 1)
	if outcome.Of(err) != outcome.Refused || st.State != document.Refused || st.Result != "" {
		t.Fatalf("Process = %+v, %v", st, err)
	}
	if _, _, ok := f.blobs.result("acme/a.txt.jsonl"); ok {
		t.Error("a result was written for a document whose chunks were refused")
	}
	es := f.ledger.entries()
	if len(es) != 1 || es[0].Deployment != "text-embedding-3-small" || es[0].Refusals != 1 || es[0].PromptTokens != 10 {
		t.Errorf("ledger = %+v, want the refused embeddings metered", es)
	}
}

func TestProcess_Rejections(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	good := f.drop(t, "acme/good.txt", prose(500))
	msg := good.Message

	encode := func(mod func(m map[string]any)) []byte {
		b, _ := json.Marshal(msg)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		mod(m)
		b, _ = json.Marshal(m)
		return b
	}
	// The blob that changed after it was enqueued: the message is stale.
	stale := f.drop(t, "acme/changed.txt", prose(500))
	newer := f.drop(t, "acme/changed.txt", prose(600))
	// Content that cannot become text.
	binary := f.drop(t, "acme/garbage.txt", append([]byte("\x00\x01\x02\x7fELF"), bytes.Repeat([]byte{0xff, 0x00}, 500)...))
	utf := f.drop(t, "acme/latin1.txt", append(prose(300), 0xe9, ' ', 'x'))
	empty := f.drop(t, "acme/blank.md", []byte("\n\n   \n\t\n"))
	gone := f.drop(t, "acme/gone.txt", prose(100))
	f.blobs.remove("acme/gone.txt")

	tests := []struct {
		name       string
		body       []byte
		reason     string
		unattrib   bool
		statusName string
	}{
		{"not JSON", []byte("hello"), "malformed claim check", true, ""},
		{"unknown field", encode(func(m map[string]any) { m["document"] = "inline text" }), "malformed claim check", true, ""},
		{"another tenant's folder", encode(func(m map[string]any) { m["tenant"] = "other" }), "invalid claim check", true, ""},
		{"outside incoming", encode(func(m map[string]any) { m["blob_url"] = accountURL + "/ingested/acme/good.txt.jsonl" }), "invalid claim check", true, ""},
		{"another account", encode(func(m map[string]any) { m["blob_url"] = "https://evil.example/devstoreaccount1/incoming/acme/good.txt" }), "invalid claim check", true, ""},
		{"traversal", encode(func(m map[string]any) { m["blob_url"] = accountURL + "/incoming/acme/%2e%2e/other/x.txt" }), "invalid claim check", true, ""},
		{"unknown tenant", encode(func(m map[string]any) {
			m["tenant"] = "ghost"
			m["blob_url"] = accountURL + "/incoming/ghost/x.txt"
		}), "unknown tenant", true, ""},
		{"suspended tenant", encode(func(m map[string]any) {
			m["tenant"] = "sleep"
			m["blob_url"] = accountURL + "/incoming/sleep/x.txt"
		}), "tenant suspended", false, "sleep/x.txt"},
		{"alias not allowed", encode(func(m map[string]any) {
			m["tenant"] = "nope"
			m["blob_url"] = accountURL + "/incoming/nope/x.txt"
		}), "alias not allowed", false, "nope/x.txt"},
		{"binary named .txt", binary.Body, "binary content", false, "acme/garbage.txt"},
		{"invalid UTF-8", utf.Body, "not UTF-8 text", false, "acme/latin1.txt"},
		{"only whitespace", empty.Body, "empty document", false, "acme/blank.md"},
		{"blob gone", gone.Body, "blob is gone", false, "acme/gone.txt"},
		{"blob changed", stale.Body, "blob changed since it was enqueued", false, ""},
	}
	for _, tt := range tests {
		st, err := f.deliver(tt.body, 1)
		if outcome.Of(err) != outcome.Rejected || !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("%s: Process = %v, want rejected (%s)", tt.name, err, tt.reason)
			continue
		}
		if tt.unattrib && (st.Tenant != "" || st.State != document.Rejected || !strings.Contains(st.Reason, tt.reason)) {
			t.Errorf("%s: recorded as %+v, want unattributed and rejected", tt.name, st)
		}
		if tt.statusName != "" {
			partition, _, _ := strings.Cut(tt.statusName, "/")
			got, err := f.statuses.Get(ctx, partition, tt.statusName)
			if err != nil || got.State != document.Rejected || !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("%s: status = %+v, %v", tt.name, got, err)
			}
		}
	}
	// The stale message did not touch the newer version's status.
	if st, _ := f.statuses.Get(ctx, "acme", "acme/changed.txt"); st.State != document.Queued || !st.SameVersion(newer.Message.ETag) {
		t.Errorf("the stale message changed the newer version's status: %+v", st)
	}
	// Nothing hostile reached another tenant, and the good document still works.
	for _, st := range f.statuses.all() {
		if st.Tenant == "other" {
			t.Errorf("a status was written for tenant other: %+v", st)
		}
	}
	if st, err := f.deliver(good.Body, 1); err != nil || st.State != document.Done {
		t.Errorf("good document after the hostile ones: %+v, %v", st, err)
	}
}

// TestProcess_TransientMetersItsAttempt: a delivery that fails after a
// model call has returned leaves no result, but its spend is in the ledger
// at once, unfinished, under its own delivery: a redelivery of the same
// attempt rewrites it, the next attempt adds its own, finished; the ledger
// holds what the simulator served on each deployment.
func TestProcess_TransientMetersItsAttempt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOptions{
		sim: func(c *aoaisim.Config) { c.Faults = []aoaisim.FaultRule{{Route: "chat", ErrorRate: 1}} },
		llm: func(c *azopenai.QueueConfig) { c.MaxAttempts = 2 },
	})
	claim := f.drop(t, "acme/a.txt", prose(5000))
	st, err := f.deliver(claim.Body, 1)
	if outcome.Of(err) != outcome.Transient {
		t.Fatalf("Process = %+v, %v; want a transient failure", st, err)
	}
	if _, _, ok := f.blobs.result("acme/a.txt.jsonl"); ok {
		t.Error("a result is visible after a failed attempt")
	}
	es := f.ledger.entries()
	if len(es) != 1 || !es[0].Unfinished || es[0].Deployment != "text-embedding-3-small" || !strings.Contains(es[0].Unit, "#1~") {
		t.Fatalf("ledger = %+v after a failed attempt; want its embedding call, unfinished, under delivery 1", es)
	}
	got, _ := f.statuses.Get(context.Background(), "acme", "acme/a.txt")
	if got.State != document.Retrying || got.Deliveries != 1 || !strings.Contains(got.Reason, "chat") {
		t.Errorf("status = %+v, want retrying with the reason", got)
	}
	// The service recovers: the next delivery finishes it, and its rows,
	// written as each call returned, are rewritten finished.
	if err := f.sim.SetFaults(nil); err != nil {
		t.Fatal(err)
	}
	if st, err := f.deliver(claim.Body, 2); err != nil || st.State != document.Done || st.Deliveries != 2 {
		t.Errorf("redelivery = %+v, %v", st, err)
	}
	served := map[string][2]int64{}
	for _, d := range f.sim.Stats().Deployments {
		served[d.Name] = [2]int64{d.PromptTokens, d.CompletionTokens}
	}
	metered := map[string][2]int64{}
	unfinished := 0
	for _, e := range f.ledger.entries() {
		m := metered[e.Deployment]
		metered[e.Deployment] = [2]int64{m[0] + e.PromptTokens, m[1] + e.CompletionTokens}
		if e.Unfinished {
			unfinished++
		}
	}
	if n := len(f.ledger.entries()); n != 3 || unfinished != 1 {
		t.Errorf("ledger after the retry = %d rows, %d unfinished; want 3 (the first attempt's, unfinished, and the second's two)", n, unfinished)
	}
	for dep, want := range served {
		if (want != [2]int64{}) && metered[dep] != want {
			t.Errorf("%s: ledger %v tokens, simulator served %v", dep, metered[dep], want)
		}
	}
}

func TestProcess_NewVersionReplacesResult(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOptions{})
	first := f.drop(t, "acme/a.txt", prose(3000))
	if _, err := f.deliver(first.Body, 1); err != nil {
		t.Fatal(err)
	}
	// The new version is not text: its rejection removes the old result,
	// which no longer describes the document.
	second := f.drop(t, "acme/a.txt", []byte("\x00binary"))
	if _, err := f.deliver(second.Body, 1); outcome.Of(err) != outcome.Rejected {
		t.Fatalf("second version: %v, want rejected", err)
	}
	if _, _, ok := f.blobs.result("acme/a.txt.jsonl"); ok {
		t.Error("the first version's result survived a rejected second version")
	}
	// A late redelivery of the first version is stale and changes nothing.
	if _, err := f.deliver(first.Body, 3); !errors.Is(err, errors.Unwrap(err)) || outcome.Of(err) != outcome.Rejected {
		t.Errorf("stale redelivery: %v", err)
	}
	if st, _ := f.statuses.Get(context.Background(), "acme", "acme/a.txt"); st.State != document.Rejected || !st.SameVersion(second.Message.ETag) {
		t.Errorf("status = %+v, want the second version's rejection", st)
	}
}

func TestProcess_LongNameAndOddCharacters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOptions{})
	for _, name := range []string{"acme/" + strings.Repeat("n", 1000) + ".txt", "acme/Ünïcødé dir/100% done (final).md"} {
		claim := f.drop(t, name, prose(1500))
		st, err := f.deliver(claim.Body, 1)
		if err != nil || st.State != document.Done {
			t.Fatalf("Process(%.40q…) = %+v, %v", name, st, err)
		}
		if _, _, ok := f.blobs.result(name + ".jsonl"); !ok {
			t.Errorf("no result for %.40q…", name)
		}
	}
	for _, e := range f.ledger.entries() {
		if len(e.Unit) > ledger.MaxUnitLen {
			t.Errorf("ledger unit of %d bytes", len(e.Unit))
		}
	}
}

// TestProcess_LastDeliveryDeadLetters: a transient failure on the queue's
// last delivery (its MaxDeliveryCount) records the document dead-lettered
// with that failure's reason, where the earlier ones said retrying; the
// version is then final: a stray redelivery does nothing and meters nothing.
func TestProcess_LastDeliveryDeadLetters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOptions{
		sim:    func(c *aoaisim.Config) { c.Faults = []aoaisim.FaultRule{{Route: "chat", ErrorRate: 1}} },
		llm:    func(c *azopenai.QueueConfig) { c.MaxAttempts = 1 },
		ingest: func(o *ingest.Options) { o.MaxDeliveryCount = map[string]int{"doc-ingest": 2, "doc-ingest-heavy": 8} },
	})
	ctx := context.Background()
	claim := f.drop(t, "acme/a.txt", prose(3000))
	if _, err := f.deliver(claim.Body, 1); outcome.Of(err) != outcome.Transient {
		t.Fatalf("delivery 1: %v, want transient", err)
	}
	if got, _ := f.statuses.Get(ctx, "acme", "acme/a.txt"); got.State != document.Retrying {
		t.Fatalf("after delivery 1 of 2: %+v, want retrying", got)
	}
	if _, err := f.deliver(claim.Body, 2); outcome.Of(err) != outcome.Transient {
		t.Fatalf("delivery 2: %v, want transient (the host must abandon it, so Service Bus dead-letters it)", err)
	}
	got, _ := f.statuses.Get(ctx, "acme", "acme/a.txt")
	if got.State != document.DeadLettered || got.Deliveries != 2 || !strings.Contains(got.Reason, "chat") || strings.Contains(got.Reason, "shelves") {
		t.Fatalf("after the last delivery: %+v, want dead_lettered after 2 deliveries with the chat failure as reason", got)
	}
	rows := len(f.ledger.entries())
	if st, err := f.deliver(claim.Body, 3); err != nil || st.State != document.DeadLettered {
		t.Errorf("a stray redelivery: %+v, %v; want nothing done", st, err)
	}
	if n := len(f.ledger.entries()); n != rows {
		t.Errorf("a stray redelivery metered: %d rows, had %d", n, rows)
	}
}

// Two messages with the same claim check (a blob event delivered twice)
// are both processed by Azure's meter: the first fails after its
// embedding call, the second finishes the document. Each keeps its own
// rows, so the ledger holds what the simulator served.
func TestProcess_DuplicateClaimChecksMeterEach(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOptions{
		sim: func(c *aoaisim.Config) { c.Faults = []aoaisim.FaultRule{{Route: "chat", ErrorRate: 1}} },
		llm: func(c *azopenai.QueueConfig) { c.MaxAttempts = 1 },
	})
	claim := f.drop(t, "acme/twice.txt", prose(5000))
	if _, err := f.deliverAs(claim.Body, "first", 1); outcome.Of(err) != outcome.Transient {
		t.Fatalf("first message: %v, want a transient failure", err)
	}
	if err := f.sim.SetFaults(nil); err != nil {
		t.Fatal(err)
	}
	if st, err := f.deliverAs(claim.Body, "second", 1); err != nil || st.State != document.Done {
		t.Fatalf("second message = %+v, %v; want done", st, err)
	}
	metered := map[string]int64{}
	for _, e := range f.ledger.entries() {
		metered[e.Deployment] += e.PromptTokens
	}
	for _, d := range f.sim.Stats().Deployments {
		if d.PromptTokens != metered[d.Name] {
			t.Errorf("%s: ledger %d prompt tokens, simulator served %d", d.Name, metered[d.Name], d.PromptTokens)
		}
	}
}
