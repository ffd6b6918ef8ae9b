package azopenai_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/outcome"
	"github.com/offpath/offpath/internal/testing/poll"
)

// TestLifecycle runs a job end to end on every surface and credential:
// write, upload, create, poll to completed, download both files, parse, and
// join every line back to its tenant and item; usage must add up to what the
// simulator counted, and both refusal shapes must come back as refused.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	for _, sf := range surfaces() {
		t.Run(sf.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			env := newSim(t, simConfig(), nil)
			c := env.client(t, sf.cfg)

			all := append(items(30, "tenant-a"), items(10, "tenant-b")...) // same item ids, two tenants
			all = append(all,
				chatItem("tenant-a", "filtered-prompt", "Please "+aoaisim.DefaultPromptTrigger+" now"),
				chatItem("tenant-b", "filtered-answer", "Say "+aoaisim.DefaultCompletionTrigger),
				chatItem("tenant-b", "ctl\x00\n\xff", "hostile item id"),
			)
			in := writeInput(t, t.TempDir(), "job-"+strings.ReplaceAll(sf.name, "/", "-"), batchDep, all)
			file := upload(t, ctx, c, in)
			if file.Purpose != "batch" || file.Bytes != in.part.Bytes || file.ExpiresAt.Sub(file.CreatedAt) != azopenai.DefaultFileExpiry {
				t.Errorf("uploaded file = %+v, want purpose batch, %d bytes, 14-day expiry", file, in.part.Bytes)
			}
			created, err := c.CreateBatch(ctx, batch.Submission{InputFileID: file.ID, JobID: "job1", Part: 0, Attempt: 0})
			if err != nil {
				t.Fatalf("CreateBatch: %v", err)
			}
			if created.Recovered || created.EnqueuedTokens != in.part.EstimatedTokens {
				t.Errorf("Created = %+v, want enqueued tokens %d (the writer's estimate)", created, in.part.EstimatedTokens)
			}
			if job, part, attempt, ok := created.Batch.Submission(); !ok || job != "job1" || part != 0 || attempt != 0 {
				t.Errorf("Submission() = %q %d %d %v", job, part, attempt, ok)
			}
			b := waitFiles(t, ctx, c, created.Batch.ID)
			if b.Status != batch.AzureCompleted || b.Err() != nil || b.CompletedAt.IsZero() || b.ExpiresAt.IsZero() {
				t.Fatalf("batch = %+v, want completed with timestamps", b)
			}
			out := readResults(t, ctx, c, b.OutputFileID)
			errs := readResults(t, ctx, c, b.ErrorFileID)
			if int64(len(out)) != b.RequestCounts.Completed || int64(len(errs)) != b.RequestCounts.Failed || b.RequestCounts.Total != int64(len(all)) {
				t.Errorf("request_counts %+v, output %d lines, errors %d lines", b.RequestCounts, len(out), len(errs))
			}

			seen := map[string]bool{}
			var sum ledger.Usage
			var order []string
			for _, res := range slices.Concat(out, errs) {
				_, entry, err := in.index.Resolve(res.CustomID)
				if err != nil {
					t.Fatalf("Resolve(%q): %v", res.CustomID, err)
				}
				it := in.refs[res.CustomID]
				if entry.Tenant != it.Tenant || entry.ItemID != it.ItemID || seen[res.CustomID] {
					t.Errorf("%s joined to %q/%q, want %q/%q once", res.CustomID, entry.Tenant, entry.ItemID, it.Tenant, it.ItemID)
				}
				seen[res.CustomID] = true
				order = append(order, res.CustomID)
				sum.Add(res.Usage)
				switch entry.ItemID {
				case "filtered-prompt":
					if res.Outcome != batchfile.Refused || res.RefusedBy != batchfile.RefusedPrompt || len(res.Categories) == 0 {
						t.Errorf("prompt-filtered line = %+v, want refused by prompt", res)
					}
				case "filtered-answer":
					if res.Outcome != batchfile.Refused || res.RefusedBy != batchfile.RefusedCompletion || res.Usage.CompletionTokens == 0 {
						t.Errorf("completion-filtered line = %+v, want refused by completion, billed", res)
					}
				default:
					if res.Outcome != batchfile.OK || res.Text == "" || res.Usage.PromptTokens == 0 {
						t.Errorf("line %s = %+v, want ok with text and usage", res.CustomID, res)
					}
				}
			}
			if len(seen) != len(all) {
				t.Errorf("joined %d distinct lines, want %d", len(seen), len(all))
			}
			if slices.IsSortedFunc(order[:len(out)], func(a, b string) int { return lineOf(t, a) - lineOf(t, b) }) {
				t.Error("output came back in input order; the join is not exercised")
			}
			var dep aoaisim.DeploymentStats
			for _, d := range env.sim.Stats().Deployments {
				if d.Name == batchDep {
					dep = d
				}
			}
			if sum.PromptTokens != dep.PromptTokens || sum.CompletionTokens != dep.CompletionTokens {
				t.Errorf("usage sum %+v, simulator counted prompt %d completion %d", sum, dep.PromptTokens, dep.CompletionTokens)
			}

			if _, err := c.CancelBatch(ctx, b.ID); !errors.Is(err, batch.ErrAzureConflict) || outcome.Of(err) != outcome.Rejected {
				t.Errorf("CancelBatch(completed) error = %v, want ErrConflict, rejected", err)
			}
			// Harvested: delete the input; a second delete is ErrNotFound.
			if err := c.DeleteFile(ctx, file.ID); err != nil {
				t.Errorf("DeleteFile: %v", err)
			}
			if err := c.DeleteFile(ctx, file.ID); !errors.Is(err, batch.ErrAzureNotFound) {
				t.Errorf("second DeleteFile error = %v, want ErrNotFound", err)
			}
		})
	}
}

// TestCancel_PartialOutput cancels a running job; the lines run before the
// cancel come back in the output file and are harvested like any other.
func TestCancel_PartialOutput(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := simConfig(aoaisim.Deployment{Name: batchDep, Model: "gpt-4o-mini", Type: aoaisim.TypeGlobalBatch, BatchLinesPerMinute: 200})
	env := newSim(t, cfg, nil)
	c := env.client(t, azopenai.BatchConfig{APIKey: aoaisim.DefaultKey, Surface: azopenai.Classic})
	in := writeInput(t, t.TempDir(), "cancel", batchDep, items(2000, "t"))
	file := upload(t, ctx, c, in)
	created, err := c.CreateBatch(ctx, batch.Submission{InputFileID: file.ID, JobID: "cancel", Part: 0})
	if err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	poll.Until(t, time.Minute, "the batch in progress with a line done", func() bool {
		b, err := c.GetBatch(ctx, created.Batch.ID)
		if err != nil {
			t.Fatalf("GetBatch: %v", err)
		}
		return b.Status == batch.AzureInProgress && b.RequestCounts.Completed > 0
	})
	b, err := c.CancelBatch(ctx, created.Batch.ID)
	if err != nil {
		t.Fatalf("CancelBatch: %v", err)
	}
	if b.Status != batch.AzureCancelling && b.Status != batch.AzureCancelled {
		t.Errorf("status after cancel = %s", b.Status)
	}
	if _, err := c.CancelBatch(ctx, created.Batch.ID); err != nil {
		t.Errorf("second CancelBatch: %v", err)
	}
	b = waitFiles(t, ctx, c, created.Batch.ID)
	out := readResults(t, ctx, c, b.OutputFileID)
	if b.Status != batch.AzureCancelled || b.Err() != nil || len(out) == 0 || len(out) >= 2000 || int64(len(out)) != b.RequestCounts.Completed {
		t.Fatalf("cancelled batch %+v with %d output lines, want partial output matching request_counts", b, len(out))
	}
	for _, res := range out {
		if _, _, err := in.index.Resolve(res.CustomID); err != nil || res.Outcome != batchfile.OK {
			t.Errorf("partial line %s: %v %v", res.CustomID, res.Outcome, err)
		}
	}
	if _, err := c.CancelBatch(ctx, created.Batch.ID); err != nil {
		t.Errorf("CancelBatch(cancelled) = %v, want harmless", err)
	}
}

// TestExpired_PartialOutput lets the completion window close mid-job: the
// lines run come back in the output file, the rest as batch_expired in the
// error file, all attributable.
func TestExpired_PartialOutput(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := simConfig(aoaisim.Deployment{Name: batchDep, Model: "gpt-4o-mini", Type: aoaisim.TypeGlobalBatch, BatchLinesPerMinute: 10})
	cfg.Batch.CompletionWindow = aoaisim.Duration(5 * time.Minute)
	env := newSim(t, cfg, nil)
	c := env.client(t, azopenai.BatchConfig{APIKey: aoaisim.DefaultKey})
	in := writeInput(t, t.TempDir(), "expire", batchDep, items(100, "t"))
	file := upload(t, ctx, c, in)
	created, err := c.CreateBatch(ctx, batch.Submission{InputFileID: file.ID, JobID: "expire", Part: 0})
	if err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	b := waitFiles(t, ctx, c, created.Batch.ID)
	if b.Status != batch.AzureExpired || b.Err() != nil || b.ExpiredAt.IsZero() {
		t.Fatalf("batch = %+v, want expired", b)
	}
	out := readResults(t, ctx, c, b.OutputFileID)
	errs := readResults(t, ctx, c, b.ErrorFileID)
	if len(out) == 0 || len(out)+len(errs) != 100 {
		t.Fatalf("expired: %d output + %d error lines, want some output and 100 in all", len(out), len(errs))
	}
	for _, res := range errs {
		if res.Outcome != batchfile.Failed || res.Code != "batch_expired" || res.StatusCode != 0 {
			t.Errorf("error line = %+v, want failed batch_expired", res)
		}
		if _, _, err := in.index.Resolve(res.CustomID); err != nil {
			t.Errorf("Resolve(%s): %v", res.CustomID, err)
		}
	}
}

// TestListBatches_Pages lists more batches than a page holds.
func TestListBatches_Pages(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	env := newSim(t, simConfig(), nil)
	c := env.client(t, azopenai.BatchConfig{APIKey: aoaisim.DefaultKey, Surface: azopenai.Classic, ListPageSize: 3})
	file := upload(t, ctx, c, writeInput(t, t.TempDir(), "list", batchDep, items(2, "t")))
	var ids []string
	for attempt := range 7 {
		created, err := c.CreateBatch(ctx, batch.Submission{InputFileID: file.ID, JobID: "list", Attempt: attempt})
		if err != nil {
			t.Fatalf("CreateBatch: %v", err)
		}
		ids = append(ids, created.Batch.ID)
	}
	var listed []string
	for b, err := range c.ListBatches(ctx) {
		if err != nil {
			t.Fatalf("ListBatches: %v", err)
		}
		listed = append(listed, b.ID)
	}
	slices.Reverse(ids) // newest first
	if !slices.Equal(listed, ids) {
		t.Errorf("ListBatches = %v, want %v", listed, ids)
	}
	if got := env.sim.Stats().Routes[aoaisim.RouteBatchesList]; got != 3 {
		t.Errorf("list requests = %d, want 3 pages", got)
	}
	b, ok, err := c.FindBatch(ctx, "list", 0, 2)
	if err != nil || !ok || b.ID != ids[4] {
		t.Errorf("FindBatch(attempt 2) = %s %v %v, want %s", b.ID, ok, err, ids[4])
	}
	if _, ok, err := c.FindBatch(ctx, "list", 1, 0); ok || err != nil {
		t.Errorf("FindBatch(absent) = %v %v", ok, err)
	}
	var files int
	for f, err := range c.ListFiles(ctx, "batch") {
		if err != nil || f.ID != file.ID {
			t.Errorf("ListFiles yielded %+v %v", f, err)
		}
		files++
	}
	if files != 1 {
		t.Errorf("ListFiles yielded %d files, want 1", files)
	}
	if f, ok, err := c.FindFile(ctx, "list.jsonl"); err != nil || !ok || f.ID != file.ID {
		t.Errorf("FindFile = %+v %v %v", f, ok, err)
	}
}

func lineOf(t *testing.T, customID string) int {
	t.Helper()
	ref, err := batchfile.ParseCustomID(customID)
	if err != nil {
		t.Fatalf("ParseCustomID(%q): %v", customID, err)
	}
	return ref.Line
}

// TestQuirks reads the odd shapes of Azure's documentation samples: ISO
// timestamps, capitalised status, "" file ids and no enqueued-token headers
// on v1.
func TestQuirks(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := simConfig()
	cfg.Quirks = aoaisim.Quirks{EmptyFileIDs: true, ISOTimestamps: true, CapitalStatus: true, NoEnqueuedHeaderOnV1: true}
	env := newSim(t, cfg, nil)
	c := env.client(t, azopenai.BatchConfig{APIKey: aoaisim.DefaultKey, Surface: azopenai.V1})
	file := upload(t, ctx, c, writeInput(t, t.TempDir(), "q", batchDep, items(2, "t")))
	created, err := c.CreateBatch(ctx, batch.Submission{InputFileID: file.ID, JobID: "q"})
	if err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	b := created.Batch
	if b.Status != batch.AzureValidating || b.CreatedAt.IsZero() || b.ExpiresAt.Sub(b.CreatedAt) != 24*time.Hour ||
		b.OutputFileID != "" || b.FilesReady() || created.EnqueuedTokens != -1 {
		t.Errorf("created = %+v, want validating, ISO timestamps read, no file ids, enqueued tokens unknown", created)
	}
	if b = waitFiles(t, ctx, c, b.ID); b.Status != batch.AzureCompleted || b.OutputFileID == "" {
		t.Errorf("batch = %+v, want completed with an output file", b)
	}
}

// TestListBatchStates reads batch states from the list a page at a time
// and stops when it has seen them all, when it has read a page per batch
// asked for, or when the list reaches batches older than the oldest asked
// for.
func TestListBatchStates(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	env := newSim(t, simConfig(), nil)
	c := env.client(t, azopenai.BatchConfig{APIKey: aoaisim.DefaultKey, Surface: azopenai.V1, ListPageSize: 3})
	file := upload(t, ctx, c, writeInput(t, t.TempDir(), "states", batchDep, items(2, "t")))
	var ids []string // oldest first
	for attempt := range 7 {
		created, err := c.CreateBatch(ctx, batch.Submission{InputFileID: file.ID, JobID: "states", Attempt: attempt})
		if err != nil {
			t.Fatalf("CreateBatch: %v", err)
		}
		ids = append(ids, created.Batch.ID)
	}
	pages := func() int64 { return env.sim.Stats().Routes[aoaisim.RouteBatchesList] }
	tests := []struct {
		name      string
		ids       []string
		since     time.Time
		wantSeen  int
		wantPages int64
	}{
		{"all seven, over three pages", ids, time.Time{}, 7, 3},
		{"the newest two, on the first page", ids[5:], time.Time{}, 2, 1},
		{"the oldest alone: no more pages than batches asked for", ids[:1], time.Time{}, 0, 1},
		{"the oldest four, past pages of others", ids[:4], time.Time{}, 4, 3},
		{"all seven, but the list stops at a page older than since", ids, time.Now().Add(time.Hour), 3, 1},
		{"none", nil, time.Time{}, 0, 0},
	}
	for _, tt := range tests {
		before := pages()
		seen, err := c.ListBatchStates(ctx, tt.ids, tt.since)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if len(seen) != tt.wantSeen || pages()-before != tt.wantPages {
			t.Errorf("%s: %d seen in %d pages, want %d in %d", tt.name, len(seen), pages()-before, tt.wantSeen, tt.wantPages)
		}
		for id, b := range seen {
			if !slices.Contains(tt.ids, id) || b.ID != id || b.Status == "" {
				t.Errorf("%s: saw %s %+v, which was not asked for or is empty", tt.name, id, b)
			}
		}
	}
}
