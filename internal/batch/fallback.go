package batch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/lines"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/tokens"
)

// Sync runs one chat completion request synchronously (package azopenai's
// Client, paced by its limiter).
type Sync interface {
	ChatBody(ctx context.Context, deployment string, body []byte, charge int64) (Answer, error)
}

// SourceSync marks a result line the deadline fallback answered.
const SourceSync = "sync"

// fallbackParts moves on the fallback of every part whose batch output is
// harvested and whose remaining items are still to run, under the job's
// lease.
func (s *Service) fallbackParts(ctx context.Context, t *tick, j Job) (Job, error) {
	if s.o.Sync == nil {
		return j, nil
	}
	run := func(ctx context.Context, j Job, i int, owner string, _ bool) (Job, error) {
		return s.fallback(ctx, j, i, owner)
	}
	j, _, err := s.eachUnderLease(ctx, t, j, PartFallback, "fallback of part", run, nil)
	return j, err
}

// rerun reports whether an item the batch left with outcome o runs in
// the fallback: those the batch never ran.
func rerun(o Outcome) bool { return o == CancelledOutcome || o == ExpiredOutcome }

// fallback runs, for at most FallbackSlice, the items of part i that its
// batch did not answer, FallbackConcurrency at a time, in line order.
// Each item's answer is kept in a blob of its own ({part}.sync.{line}.
// jsonl, as a batch output line) before its ledger row (a unit per item)
// is written; Fallback.Done, the items finished in order, is advanced
// after each group. A run cut short anywhere starts again at Done and
// finds the answers already kept, so no item is asked twice once its
// answer is stored, and none is booked twice. When all are done, the
// part's results are the batch's with those items replaced, each once.
func (s *Service) fallback(ctx context.Context, j Job, i int, owner string) (Job, error) {
	p := j.Parts[i]
	lines, fromBatch, err := s.fallbackLines(ctx, &j, &p)
	if err != nil {
		return j, err
	}
	stop := s.now().Add(s.o.FallbackSlice)
	next := p.Fallback.Done
	if next < len(lines) {
		in, _, err := s.o.Blobs.Open(ctx, s.o.Containers.Inputs, p.InputBlob)
		if err != nil {
			return j, fmt.Errorf("open input: %w", err)
		}
		defer in.Close()
		rd := &lineSeeker{br: bufio.NewReaderSize(in, 1<<20)}
		for next < len(lines) && s.now().Before(stop) {
			group := lines[next:min(next+s.o.FallbackConcurrency, len(lines))]
			got, err := s.runGroup(ctx, &j, &p, rd, group)
			if err != nil {
				return j, err
			}
			from := next
			j, err = s.update(ctx, j, s.holding(owner, func(j *Job) error {
				q := &j.Parts[i]
				if q.Status != PartFallback || q.Fallback.Done != from {
					return errSkip
				}
				f := q.Fallback
				f.Done, f.Items, f.FromBatch = from+len(group), len(lines), fromBatch
				for _, g := range got {
					f.Counts.inc(g.outcome)
					f.Usage.Add(g.usage)
				}
				return nil
			}))
			if err != nil {
				return j, err
			}
			if j.Parts[i].Fallback.Done != from+len(group) {
				return j, nil // moved on meanwhile
			}
			next = from + len(group)
		}
	}
	if next < len(lines) {
		return j, nil // the next tick goes on
	}
	return s.finishFallback(ctx, j, i, owner, len(lines), fromBatch)
}

// fallbackLines reads the part's harvested batch results: the lines the
// fallback runs, ascending, and how many the batch answered.
func (s *Service) fallbackLines(ctx context.Context, j *Job, p *Part) ([]int, int64, error) {
	var lines []int
	var fromBatch int64
	err := s.eachResult(ctx, p.ResultsBlob, func(l *ResultLine) error {
		if rerun(l.Outcome) {
			lines = append(lines, l.Line)
		} else {
			fromBatch++
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	slices.Sort(lines)
	return lines, fromBatch, nil
}

// eachResult calls fn for each line of a results blob.
func (s *Service) eachResult(ctx context.Context, blob string, fn func(l *ResultLine) error) error {
	r, err := s.openResults(ctx, blob)
	if err != nil {
		return err
	}
	defer r.Close()
	br := bufio.NewReaderSize(r, 256<<10)
	var buf []byte
	for {
		raw, err := lines.Read(br, buf[:0], batchfile.DefaultMaxLineBytes)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read results %s: %w", blob, err)
		}
		buf = raw
		var l ResultLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return fmt.Errorf("results %s: %w", blob, err)
		}
		if err := fn(&l); err != nil {
			return err
		}
	}
}

// itemRun is what one fallback item came to.
type itemRun struct {
	outcome Outcome
	usage   ledger.Usage
}

// runGroup answers the group's lines at once: each from its kept answer,
// or from the synchronous deployment (then kept), and books it.
func (s *Service) runGroup(ctx context.Context, j *Job, p *Part, rd *lineSeeker, group []int) ([]itemRun, error) {
	bodies := make([][]byte, len(group))
	for k, line := range group {
		raw, err := rd.get(line)
		if err != nil {
			return nil, fmt.Errorf("input line %d: %w", line, err)
		}
		bodies[k] = raw
	}
	got := make([]itemRun, len(group))
	errs := make([]error, len(group))
	var wg sync.WaitGroup
	for k := range group {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[k], errs[k] = s.runItem(ctx, j, p, group[k], bodies[k])
		}()
	}
	wg.Wait()
	return got, errors.Join(errs...)
}

// syncBlob is where the fallback keeps a line's answer.
func syncBlob(j *Job, p *Part, line int) string {
	return partBlob(j, p.Index, "sync."+strconv.Itoa(line)+".jsonl")
}

// runItem answers one line and books it under its own ledger unit.
func (s *Service) runItem(ctx context.Context, j *Job, p *Part, line int, input []byte) (itemRun, error) {
	kept, err := s.keptAnswer(ctx, j, p, line)
	if err != nil {
		return itemRun{}, err
	}
	if kept == nil {
		if kept, err = s.ask(ctx, j, p, line, input); err != nil {
			return itemRun{}, err
		}
	}
	res, o := readAnswer(kept)
	var u ledger.Usage
	if res != nil {
		o = Meter(&u, res)
	}
	if u.Requests > 0 || u.PromptTokens > 0 || u.CompletionTokens > 0 {
		e := ledger.Entry{Tenant: j.Tenant, Month: j.Month(), Path: ledger.Queue, Unit: FallbackUnit(j.ID, p.Index, line),
			Alias: j.Alias, Deployment: p.Fallback.Deployment, Usage: u}
		if err := e.Estimate(s.o.Catalog); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("no price for the fallback's usage; recorded without a cost")
		}
		if err := s.o.Ledger.Record(ctx, e); err != nil {
			return itemRun{}, fmt.Errorf("record usage of line %d: %w", line, err)
		}
	}
	return itemRun{outcome: o, usage: u}, nil
}

// FallbackUnit is the ledger unit of one item a job's part ran through the
// deadline fallback: the same on every run.
func FallbackUnit(jobID string, part, line int) string {
	return LedgerUnit(jobID, part) + "/sync-" + strconv.Itoa(line)
}

// keptAnswer returns the line's kept answer, or nil if there is none.
func (s *Service) keptAnswer(ctx context.Context, j *Job, p *Part, line int) ([]byte, error) {
	r, _, err := s.o.Blobs.Open(ctx, s.o.Containers.Results, syncBlob(j, p, line))
	if errors.Is(err, object.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read kept answer of line %d: %w", line, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read kept answer of line %d: %w", line, err)
	}
	return b, nil
}

// ask sends the line's request to the synchronous deployment and keeps
// the answer as a batch output line.
func (s *Service) ask(ctx context.Context, j *Job, p *Part, line int, input []byte) ([]byte, error) {
	var in struct {
		CustomID string                     `json:"custom_id"`
		Body     map[string]json.RawMessage `json:"body"`
	}
	if err := json.Unmarshal(input, &in); err != nil || in.Body == nil {
		return nil, fmt.Errorf("input line %d is not a request line", line)
	}
	dep := p.Fallback.Deployment
	in.Body["model"], _ = json.Marshal(dep)
	body, err := json.Marshal(in.Body)
	if err != nil {
		return nil, fmt.Errorf("input line %d: %w", line, err)
	}
	var limit struct {
		MaxTokens           int64 `json:"max_tokens"`
		MaxCompletionTokens int64 `json:"max_completion_tokens"`
	}
	_ = json.Unmarshal(body, &limit)
	charge := int64(tokens.Bytes(len(in.Body["messages"]))) + max(limit.MaxTokens, limit.MaxCompletionTokens)
	ans, err := s.o.Sync.ChatBody(ctx, dep, body, charge)
	if err != nil {
		return nil, fmt.Errorf("line %d: %w", line, err)
	}
	if !json.Valid(ans.Body) {
		ans.Body, _ = json.Marshal(map[string]any{"error": map[string]string{"code": "unreadable_answer", "message": "the synchronous deployment's answer is not JSON"}})
	}
	out, err := json.Marshal(map[string]any{"custom_id": in.CustomID,
		"response": map[string]any{"status_code": ans.StatusCode, "body": json.RawMessage(ans.Body)}})
	if err != nil {
		return nil, err
	}
	w, err := s.o.Blobs.Create(ctx, s.o.Containers.Results, syncBlob(j, p, line), nil)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(out); err != nil {
		w.Abort(err)
		return nil, fmt.Errorf("keep answer of line %d: %w", line, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("keep answer of line %d: %w", line, err)
	}
	return out, nil
}

// readAnswer parses a kept answer; an unreadable one is a failed item.
func readAnswer(kept []byte) (*batchfile.Result, Outcome) {
	res, err := batchfile.NewReader(bytes.NewReader(kept), 0).Next()
	if err != nil {
		return nil, FailedOutcome
	}
	return &res, outcomeOf(&res)
}

// lineSeeker reads an input file's lines forward, by line number.
type lineSeeker struct {
	br  *bufio.Reader
	pos int
	buf []byte
}

func (r *lineSeeker) get(line int) ([]byte, error) {
	for {
		raw, err := lines.Read(r.br, r.buf[:0], batchfile.DefaultMaxLineBytes)
		if err != nil {
			return nil, err
		}
		r.buf = raw
		r.pos++
		if r.pos-1 == line {
			return bytes.Clone(raw), nil
		}
		if r.pos-1 > line {
			return nil, fmt.Errorf("line %d asked after line %d", line, r.pos-1)
		}
	}
}
