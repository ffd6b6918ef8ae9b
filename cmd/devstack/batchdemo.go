package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// showBatch walks a small batch job through the whole batch path: it
// submits 12 items for a demo tenant through the dev host, fires the
// batch-poll timer (master key) instead of waiting for its schedule, prints
// each change of state until the job is harvested, then the per-item
// outcomes and the usage the harvest recorded. The simulator's fast clock
// makes the job take seconds.
func showBatch(ctx context.Context, w io.Writer, n int, hostURL, functionKey, masterKey, apiKey string, timeout time.Duration) error {
	items := make([]map[string]any, 12)
	for i := range items {
		prompt := fmt.Sprintf("Ticket %d: the printer on floor %d prints only blank pages since the update.", 1000+i, 1+i%4)
		if i == 5 {
			prompt = "Ticket 1005: SIM_FILTER_COMPLETION (the simulator's content filter refuses this answer)."
		}
		items[i] = map[string]any{"id": fmt.Sprintf("ticket-%d", 1000+i), "prompt": prompt}
	}
	body, _ := json.Marshal(map[string]any{"alias": "summarize", "system_prompt": "Summarise the support ticket in one sentence.",
		"max_tokens": 48, "idempotency_key": "devstack-demo-" + time.Now().UTC().Format("20060102T150405"),
		"metadata": map[string]string{"source": "make run"}, "items": items})
	var job jobView
	status, err := call(ctx, http.MethodPost, hostURL+"/api/v1/batches", functionKey, apiKey, body, &job)
	if err != nil || status != http.StatusAccepted {
		return fmt.Errorf("POST /api/v1/batches: status %d, %v", status, err)
	}
	done := step(w, n, fmt.Sprintf("The batch path: 12 items for contoso, POST /api/v1/batches → %d, job %s %s; batch-poll fired every second", status, job.ID, job.State))
	start := time.Now()
	if err := follow(ctx, w, hostURL, functionKey, masterKey, apiKey, &job, start, timeout, harvested); err != nil {
		return err
	}
	res, err := send(ctx, http.MethodGet, hostURL+"/api/v1/batches/"+job.ID+"/results", functionKey, apiKey, nil)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for n := 0; sc.Scan() && n < 3; n++ {
		var l struct {
			ItemID  string `json:"item_id"`
			Outcome string `json:"outcome"`
			Answer  string `json:"answer"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			fmt.Fprintf(w, "     %s  %-8s %s\n", l.ItemID, l.Outcome, oneLine(l.Answer, 90))
		}
	}
	done("harvested (%s): %d ok, %d refused, %d failed, %d expired, %d cancelled; %d prompt + %d completion tokens billed, $%s estimated; GET /api/v1/batches/%s/results streams all %d results",
		job.Final, job.Outcomes["ok"], job.Outcomes["refused"], job.Outcomes["failed"], job.Outcomes["expired"], job.Outcomes["cancelled"],
		job.Usage.PromptTokens, job.Usage.CompletionTokens, job.Usage.Cost, job.ID, job.Items)
	return nil
}

// jobView is what the demos read of a batch job.
type jobView struct {
	ID, State, Final string
	Items            int
	CancelRequested  bool `json:"cancel_requested"`
	Parts            []struct {
		Status      string `json:"status"`
		AzureStatus string `json:"azure_status"`
	}
	Outcomes map[string]int64 `json:"outcomes"`
	Usage    struct {
		PromptTokens     int64       `json:"prompt_tokens"`
		CompletionTokens int64       `json:"completion_tokens"`
		Requests         int64       `json:"requests"`
		Refusals         int64       `json:"refusals"`
		Cost             json.Number `json:"estimated_cost_usd"`
	} `json:"usage"`
	RequestCounts struct {
		Total     int64 `json:"total"`
		Completed int64 `json:"completed"`
		Failed    int64 `json:"failed"`
	} `json:"request_counts"`
}

// progress is the job's state, with Azure's status and counts once a part
// is at Azure.
func (j *jobView) progress() string {
	line := j.State
	if j.CancelRequested && j.State != "harvested" {
		line += " (cancel requested)"
	}
	if len(j.Parts) > 0 && j.Parts[0].AzureStatus != "" {
		line += fmt.Sprintf(", Azure: %s, %d of %d requests done", j.Parts[0].AzureStatus, j.RequestCounts.Completed+j.RequestCounts.Failed, j.RequestCounts.Total)
	}
	return line
}

func harvested(j *jobView) bool { return j.State == "harvested" }

// follow fires the batch-poll timer (master key) every second rather than
// waiting for its schedule, reads the job, and prints each change of its
// progress, until stop says so or timeout passes.
func follow(ctx context.Context, w io.Writer, hostURL, functionKey, masterKey, apiKey string, job *jobView, start time.Time, timeout time.Duration, stop func(*jobView) bool) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for !stop(job) {
		if time.Now().After(deadline) {
			return fmt.Errorf("job %s still %s after %s", job.ID, job.progress(), ms(timeout))
		}
		if _, err := call(ctx, http.MethodPost, hostURL+"/admin/functions/batch-poll", masterKey, "", []byte(`{}`), nil); err != nil {
			return fmt.Errorf("fire batch-poll: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		if _, err := call(ctx, http.MethodGet, hostURL+"/api/v1/batches/"+job.ID, functionKey, apiKey, nil, job); err != nil {
			return err
		}
		if line := job.progress(); line != last {
			fmt.Fprintf(w, "     %s after %s\n", line, ms(time.Since(start)))
			last = line
		}
	}
	return nil
}

// call sends a request through the dev host and decodes a JSON answer
// into out (when not nil).
func call(ctx context.Context, method, url, functionKey, apiKey string, body []byte, out any) (int, error) {
	res, err := send(ctx, method, url, functionKey, apiKey, body)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		return res.StatusCode, fmt.Errorf("%s %s: status %d: %s", method, url, res.StatusCode, clipText(string(b), 200))
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return res.StatusCode, fmt.Errorf("%s %s: %w", method, url, err)
		}
	}
	return res.StatusCode, nil
}

func send(ctx context.Context, method, url, functionKey, apiKey string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("x-functions-key", functionKey)
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s %s", method, url), err)
	}
	return res, nil
}

func clipText(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
