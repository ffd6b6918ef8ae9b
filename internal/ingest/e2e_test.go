package ingest_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/local/aoaisim"
)

// TestE2E_DocumentToIngested: a document dropped into incoming/acme/ is
// found in ingested/acme/ with chunks, vectors and summary, its usage in
// the ledger, its status done; documents whose summary the content filter
// refuses (both shapes) end refused after one delivery, metered, with
// their chunks indexed and nothing dead-lettered.
func TestE2E_DocumentToIngested(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	name := "acme/kb/returns policy.md"
	etag, err := s.upload(name, prose(20<<10), map[string]string{"correlation_id": "kb-upload-7"})
	if err != nil {
		t.Fatal(err)
	}
	// A correlation id in any script travels percent-encoded, as blob
	// metadata must be ASCII, and arrives as the text it was.
	const corr = "Zürich–Δ-0042"
	zName := "acme/kb/zürich.md"
	zETag, err := s.upload(zName, prose(3000), map[string]string{"correlation_id": url.PathEscape(corr)})
	if err != nil {
		t.Fatal(err)
	}
	refusals := map[string]string{
		"acme/refused/prompt.txt":     aoaisim.DefaultPromptTrigger,
		"acme/refused/completion.txt": aoaisim.DefaultCompletionTrigger,
	}
	etags := map[string]string{}
	for n, trigger := range refusals {
		etags[n] = s.mustUpload(n, append(prose(4000), []byte("\n\n"+trigger+"\n")...))
	}

	st := s.final("acme", name, etag, 60*time.Second)
	if st.State != document.Done || st.Deliveries != 1 || st.CorrelationID != "kb-upload-7" || st.Chunks < 10 || st.Result != "ingested/"+name+".jsonl" {
		t.Fatalf("status = %+v", st)
	}
	lines := s.result(name)
	if head := lines[0]; head.Kind != "document" || head.Summary == "" || len(head.Keywords) == 0 || head.Chunks != st.Chunks || head.CorrelationID != "kb-upload-7" {
		t.Errorf("document line = %+v", head)
	}
	for i, l := range lines[1:] {
		if l.Kind != "chunk" || l.Chunk != i || len(l.Vector) != 16 || l.Text == "" || l.ETag != etag {
			t.Fatalf("chunk line %d = %+v", i, l)
		}
	}
	rows := s.usage("acme", name, etag)
	var prompt, completion int64
	for _, e := range rows {
		prompt += e.PromptTokens
		completion += e.CompletionTokens
		if e.Alias != "ingest" || e.Path != "queue" || e.Cost == 0 && e.Deployment == "gpt-4o-mini" {
			t.Errorf("ledger row = %+v", e)
		}
	}
	if len(rows) != 2 || prompt != st.Usage.PromptTokens || completion != st.Usage.CompletionTokens || prompt == 0 || completion == 0 {
		t.Errorf("ledger rows %+v, status usage %+v: want two rows (embeddings, chat) adding up to it", rows, st.Usage)
	}

	if st := s.final("acme", zName, zETag, 60*time.Second); st.State != document.Done || st.CorrelationID != corr || st.CorrelationNote != "" {
		t.Errorf("%s: status = %+v, want done with correlation id %q", zName, st, corr)
	}
	if head := s.result(zName)[0]; head.CorrelationID != corr {
		t.Errorf("%s: result correlation id %q, want %q", zName, head.CorrelationID, corr)
	}
	if _, props, err := s.results.Read(context.Background(), zName+".jsonl"); err != nil || props.Metadata["offpath_correlation_id"] != url.PathEscape(corr) {
		t.Errorf("%s: result metadata %v, %v; want the correlation id percent-encoded", zName, props.Metadata, err)
	}
	if logs := s.out.String(); !strings.Contains(logs, `"correlation_id":"`+corr+`","queue"`) || !strings.Contains(logs, `"correlation_id":"`+corr+`","delivery_count"`) {
		t.Errorf("the logs of the enqueue and the processing do not carry %q", corr)
	}

	for n := range refusals {
		st := s.final("acme", n, etags[n], 60*time.Second)
		if st.State != document.Refused || st.Deliveries != 1 || !strings.Contains(st.Reason, "content_filter") {
			t.Errorf("%s: status = %+v, want refused after one delivery", n, st)
			continue
		}
		if lines := s.result(n); len(lines) < 2 || lines[0].SummaryRefused == nil {
			t.Errorf("%s: result without its chunks or the refusal: %d lines", n, len(lines))
		}
		refused := false
		for _, e := range s.usage("acme", n, etags[n]) {
			refused = refused || e.Refusals == 1
		}
		if !refused {
			t.Errorf("%s: the refusal is not metered", n)
		}
	}
	if dead := s.deadLettered("doc-ingest"); dead != 0 {
		t.Errorf("%d dead letters, want none: answered questions are not failures", dead)
	}
	chat := s.simStats("gpt-4o-mini")
	if chat.Filtered != 2 {
		t.Errorf("the simulator filtered %d requests, want 2", chat.Filtered)
	}
}

func (s *stack) simStats(name string) aoaisim.DeploymentStats {
	for _, d := range s.sim.Stats().Deployments {
		if d.Name == name {
			return d
		}
	}
	return aoaisim.DeploymentStats{}
}
