package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/catalog"
)

func (c *cli) batches(ctx context.Context, args []string) error {
	return c.group("batches", args, map[string]func([]string) error{
		"submit":  func(a []string) error { return c.submitBatch(ctx, a) },
		"list":    func(a []string) error { return c.listBatches(ctx, a) },
		"get":     func(a []string) error { return c.getBatch(ctx, a) },
		"wait":    func(a []string) error { return c.waitBatch(ctx, a) },
		"results": func(a []string) error { return c.batchResults(ctx, a) },
		"cancel":  func(a []string) error { return c.cancelBatch(ctx, a) },
	}, "submit, list, get, wait, results, cancel")
}

// job is what the CLI reads of a batch job; -json prints the API's answer
// as it came.
type job struct {
	ID              string            `json:"id"`
	State           batch.State       `json:"state"`
	Final           batch.State       `json:"final"`
	Alias           string            `json:"alias"`
	Items           int64             `json:"items"`
	Source          string            `json:"source"`
	Metadata        map[string]string `json:"metadata"`
	EstimatedTokens int64             `json:"estimated_tokens"`
	CancelRequested bool              `json:"cancel_requested"`
	Created         time.Time         `json:"created"`
	ExpectedBy      *time.Time        `json:"expected_by"`
	Finished        *time.Time        `json:"finished"`
	Harvested       *time.Time        `json:"harvested"`
	RequestCounts   requestCounts     `json:"request_counts"`
	Outcomes        batch.Counts      `json:"outcomes"`
	Usage           struct {
		PromptTokens     int64         `json:"prompt_tokens"`
		CompletionTokens int64         `json:"completion_tokens"`
		Cost             catalog.Money `json:"estimated_cost_usd"`
	} `json:"usage"`
	Parts []jobPart `json:"parts"`
}

// jobPart is one Global Batch job of a job.
type jobPart struct {
	Index       int           `json:"index"`
	Status      string        `json:"status"`
	AzureStatus string        `json:"azure_status"`
	Items       int64         `json:"items"`
	HeldReason  string        `json:"held_reason"`
	Counts      requestCounts `json:"request_counts"`
	Errors      []struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"errors"`
}

// requestCounts are Azure's counts.
type requestCounts struct {
	Total     int64 `json:"total"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
}

// done is how many items are through: the harvested outcomes once there
// are any, Azure's counts before.
func (j *job) done() int64 {
	if n := j.Outcomes.Total(); n > 0 {
		return n
	}
	return j.RequestCounts.Completed + j.RequestCounts.Failed
}

func (c *cli) submitBatch(ctx context.Context, args []string) error {
	fs := c.flags("batches submit", "-alias A (-input FILE.jsonl | -input-blob NAME) [flags]",
		"Submit a batch job: the items of a JSONL file (one {\"id\", \"prompt\" or \"messages\", \"max_tokens\"} a line),\n"+
			"or a JSONL blob already in the tenant's batch input container.")
	api := addAPIFlags(fs)
	alias := fs.String("alias", "", "the model alias (required)")
	input := fs.String("input", "", "a JSONL file of items")
	blob := fs.String("input-blob", "", "a JSONL blob of items, instead of -input")
	system := fs.String("system-prompt", "", "the system prompt of every item")
	maxTokens := fs.Int("max-tokens", 0, "the largest completion of an item (0: the alias's default)")
	metadata := fs.String("metadata", "", "key=value pairs, comma-separated, kept on the job")
	idem := fs.String("idempotency-key", "", "submitting again with the same key returns the same job")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if err := none(fs, pos, " (the items come from -input or -input-blob)"); err != nil {
		return err
	}
	switch {
	case *alias == "":
		return usagef("batches submit: missing -alias")
	case (*input == "") == (*blob == ""):
		return usagef("batches submit: missing -input FILE or -input-blob NAME (one of them)")
	case *maxTokens < 0:
		return usagef("batches submit: -max-tokens %d: want 0 or more", *maxTokens)
	}
	meta := map[string]string{}
	for _, kv := range split(*metadata) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usagef("batches submit: -metadata %q: want key=value", kv)
		}
		meta[k] = v
	}
	req := map[string]any{"alias": *alias}
	if *system != "" {
		req["system_prompt"] = *system
	}
	if *maxTokens > 0 {
		req["max_tokens"] = *maxTokens
	}
	if len(meta) > 0 {
		req["metadata"] = meta
	}
	if *idem != "" {
		req["idempotency_key"] = *idem
	}
	if *blob != "" {
		req["input_blob"] = *blob
	} else {
		items, err := readItems(*input)
		if err != nil {
			return err
		}
		req["items"] = items
	}
	client, err := c.client(api)
	if err != nil {
		return err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	var j job
	raw, err := client.call(ctx, "POST", "/api/v1/batches", body, &j)
	if err != nil {
		return err
	}
	if *api.asJSON {
		return c.printRaw(raw)
	}
	_, err = fmt.Fprintf(c.out, "job %s: %s, %d items, about %s tokens (offpath batches wait %s)\n", j.ID, j.State, j.Items, thousands(j.EstimatedTokens), j.ID)
	return err
}

// readItems reads a JSONL file of items: every non-blank line a JSON
// object, passed to the API as it is (the API checks the fields).
func readItems(path string) ([]json.RawMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("batches submit -input: %w", err)
	}
	defer f.Close()
	var items []json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' || !json.Valid(line) {
			return nil, fmt.Errorf("%s line %d: not a JSON object (want {\"id\": ..., \"prompt\": ...})", path, n)
		}
		items = append(items, json.RawMessage(bytes.Clone(line)))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s holds no items", path)
	}
	return items, nil
}

func (c *cli) listBatches(ctx context.Context, args []string) error {
	fs := c.flags("batches list", "[-state S] [-limit N] [-cursor C] [-json]", "The tenant's batch jobs, newest first.")
	api := addAPIFlags(fs)
	state := fs.String("state", "", "only jobs in this state ("+joinStates()+")")
	limit := fs.Int("limit", 20, fmt.Sprintf("at most this many (1..%d)", batch.MaxListLimit))
	cursor := fs.String("cursor", "", "the next page, from the previous page's next cursor")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if err := none(fs, pos, ""); err != nil {
		return err
	}
	q := url.Values{"limit": {strconv.Itoa(*limit)}}
	if *state != "" {
		if _, ok := batch.ParseState(*state); !ok {
			return usagef("batches list -state %q: want one of %s", *state, joinStates())
		}
		q.Set("state", *state)
	}
	if *limit < 1 || *limit > batch.MaxListLimit {
		return usagef("batches list -limit %d: want 1..%d", *limit, batch.MaxListLimit)
	}
	if *cursor != "" {
		q.Set("cursor", *cursor)
	}
	client, err := c.client(api)
	if err != nil {
		return err
	}
	var page struct {
		Data       []job  `json:"data"`
		NextCursor string `json:"next_cursor"`
	}
	raw, err := client.call(ctx, "GET", "/api/v1/batches?"+q.Encode(), nil, &page)
	if err != nil {
		return err
	}
	if *api.asJSON {
		return c.printRaw(raw)
	}
	if len(page.Data) == 0 {
		what := "batch jobs"
		if *state != "" {
			what = *state + " batch jobs"
		}
		_, err := fmt.Fprintf(c.out, "no %s\n", what)
		return err
	}
	g := &grid{right: []bool{false, false, false, true, true, false}}
	g.add("ID", "STATE", "ALIAS", "ITEMS", "DONE", "CREATED")
	for _, j := range page.Data {
		g.add(j.ID, stateText(&j), j.Alias, fmt.Sprint(j.Items), fmt.Sprint(j.done()), j.Created.UTC().Format(time.RFC3339))
	}
	if err := g.write(c.out); err != nil {
		return err
	}
	if page.NextCursor != "" {
		fmt.Fprintf(c.out, "\nmore: offpath batches list -cursor %s\n", page.NextCursor)
	}
	return nil
}

func joinStates() string {
	var s []string
	for _, st := range batch.States() {
		s = append(s, string(st))
	}
	return strings.Join(s, ", ")
}

// stateText is the state, with the final one once harvested.
func stateText(j *job) string {
	if j.State == batch.Harvested && j.Final != "" {
		return fmt.Sprintf("%s (%s)", j.State, j.Final)
	}
	if j.CancelRequested && j.State != batch.Harvested {
		return string(j.State) + " (cancelling)"
	}
	return string(j.State)
}

// jobPath is a job's URL path; the id is the one positional argument.
func jobPath(id string, rest ...string) string {
	return "/api/v1/batches/" + url.PathEscape(id) + strings.Join(rest, "")
}

// jobCommand parses a batches command that takes one job id and makes its
// API client.
func (c *cli) jobCommand(fs *flag.FlagSet, api apiFlags, args []string) (string, *apiClient, error) {
	pos, err := c.parse(fs, args)
	if err != nil {
		return "", nil, err
	}
	id, err := one(fs, pos, "job id")
	if err != nil {
		return "", nil, err
	}
	client, err := c.client(api)
	return id, client, err
}

func (c *cli) getBatch(ctx context.Context, args []string) error {
	fs := c.flags("batches get", "ID [-json]", "A batch job: its state, parts (with Azure's status), counts, usage and deadline.")
	api := addAPIFlags(fs)
	id, client, err := c.jobCommand(fs, api, args)
	if err != nil {
		return err
	}
	var j job
	raw, err := client.call(ctx, "GET", jobPath(id), nil, &j)
	if err != nil {
		return err
	}
	if *api.asJSON {
		return c.printRaw(raw)
	}
	return c.printJob(&j)
}

func (c *cli) printJob(j *job) error {
	g := &grid{right: []bool{false, false}}
	g.add("job", j.ID)
	g.add("state", stateText(j))
	g.add("alias", j.Alias)
	g.add("items", fmt.Sprintf("%d (%d done)", j.Items, j.done()))
	if o := j.Outcomes; o.Total() > 0 {
		g.add("outcomes", fmt.Sprintf("%d ok, %d refused, %d failed, %d expired, %d cancelled", o.OK, o.Refused, o.Failed, o.Expired, o.Cancelled))
	}
	g.add("created", j.Created.UTC().Format(time.RFC3339))
	if j.ExpectedBy != nil {
		g.add("deadline", fmt.Sprintf("%s (in %s)", j.ExpectedBy.UTC().Format(time.RFC3339), j.ExpectedBy.Sub(c.now()).Round(time.Minute)))
	}
	if j.Finished != nil {
		g.add("finished", j.Finished.UTC().Format(time.RFC3339))
	}
	if j.Usage.PromptTokens+j.Usage.CompletionTokens > 0 {
		g.add("usage", fmt.Sprintf("%s prompt + %s completion tokens, about $%s", thousands(j.Usage.PromptTokens), thousands(j.Usage.CompletionTokens), j.Usage.Cost.Dollars()))
	}
	for _, p := range j.Parts {
		line := fmt.Sprintf("%s, %d items", p.Status, p.Items)
		if p.AzureStatus != "" {
			line += fmt.Sprintf(", Azure %s %d/%d", p.AzureStatus, p.Counts.Completed+p.Counts.Failed, p.Counts.Total)
		}
		if p.HeldReason != "" {
			line += ", held: " + p.HeldReason
		}
		for _, e := range p.Errors {
			line += fmt.Sprintf(", error %s: %s", e.Code, e.Message)
		}
		g.add(fmt.Sprintf("part %d", p.Index), line)
	}
	return g.write(c.out)
}

func (c *cli) cancelBatch(ctx context.Context, args []string) error {
	fs := c.flags("batches cancel", "ID [-json]", "Cancel a batch job: parts not yet submitted never are, submitted ones are cancelled on Azure;\nwhat finished before is still harvested and billed.")
	api := addAPIFlags(fs)
	id, client, err := c.jobCommand(fs, api, args)
	if err != nil {
		return err
	}
	var j job
	raw, err := client.call(ctx, "POST", jobPath(id, "/cancel"), nil, &j)
	if err != nil {
		return err
	}
	if *api.asJSON {
		return c.printRaw(raw)
	}
	_, err = fmt.Fprintf(c.out, "job %s: cancel requested (%s); offpath batches wait %s follows it to the end\n", j.ID, stateText(&j), j.ID)
	return err
}

func (c *cli) batchResults(ctx context.Context, args []string) error {
	fs := c.flags("batches results", "ID [-o FILE] [-json]",
		"The job's results as JSONL, one line per item (outcome, text, usage), to stdout or a file.\nWhile parts are still running, the lines of the harvested ones.")
	api := addAPIFlags(fs)
	outPath := fs.String("o", "", "write to this file (whole or not at all) instead of stdout")
	id, client, err := c.jobCommand(fs, api, args)
	if err != nil {
		return err
	}
	res, err := client.send(ctx, "GET", jobPath(id, "/results"), nil)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	complete := res.Header.Get("Offpath-Results-Complete") != "false"
	if *outPath == "" {
		if _, err := io.Copy(c.out, res.Body); err != nil {
			return fmt.Errorf("results of %s: %w", id, err)
		}
		if !complete {
			fmt.Fprintf(c.errOut, "offpath: job %s is %s: these are the results harvested so far\n", id, res.Header.Get("Offpath-Job-State"))
		}
		return nil
	}
	lines, bytesWritten, err := writeFileWhole(*outPath, res.Body)
	if err != nil {
		return fmt.Errorf("results of %s: %w", id, err)
	}
	if *api.asJSON {
		return c.printJSON(map[string]any{"job": id, "file": *outPath, "lines": lines, "bytes": bytesWritten, "complete": complete})
	}
	note := ""
	if !complete {
		note = " (not complete yet: the job is " + res.Header.Get("Offpath-Job-State") + ")"
	}
	_, err = fmt.Fprintf(c.out, "%s: %d results, %d bytes%s\n", *outPath, lines, bytesWritten, note)
	return err
}

// writeFileWhole writes r to path through a temporary file in the same
// folder, renamed into place once all of it is written.
func writeFileWhole(path string, r io.Reader) (lines, n int64, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		k, rerr := r.Read(buf)
		if k > 0 {
			lines += int64(bytes.Count(buf[:k], []byte{'\n'}))
			n += int64(k)
			if _, err = tmp.Write(buf[:k]); err != nil {
				return 0, 0, err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return 0, 0, rerr
		}
	}
	if err = tmp.Close(); err != nil {
		return 0, 0, err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return 0, 0, err
	}
	return lines, n, nil
}
