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
func showBatch(ctx context.Context, w io.Writer, hostURL, functionKey, masterKey, apiKey string, timeout time.Duration) error {
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
	var job struct {
		ID, State, Final string
		Items            int
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
		RequestCounts struct{ Total, Completed, Failed int64 } `json:"request_counts"`
	}
	status, err := call(ctx, http.MethodPost, hostURL+"/api/v1/batches", functionKey, apiKey, body, &job)
	if err != nil || status != http.StatusAccepted {
		return fmt.Errorf("POST /api/v1/batches: status %d, %v", status, err)
	}
	fmt.Fprintf(w, "\n  Batch path: POST /api/v1/batches as contoso (12 items) → %d, job %s %s\n", status, job.ID, job.State)
	deadline := time.Now().Add(timeout)
	last := ""
	for job.State != "harvested" {
		if time.Now().After(deadline) {
			return fmt.Errorf("job %s still %s after %v", job.ID, job.State, timeout)
		}
		// Fire batch-poll now rather than waiting for its schedule.
		if _, err := call(ctx, http.MethodPost, hostURL+"/admin/functions/batch-poll", masterKey, "", []byte(`{}`), nil); err != nil {
			return fmt.Errorf("fire batch-poll: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		if _, err := call(ctx, http.MethodGet, hostURL+"/api/v1/batches/"+job.ID, functionKey, apiKey, nil, &job); err != nil {
			return err
		}
		line := job.State
		if len(job.Parts) > 0 && job.Parts[0].AzureStatus != "" {
			line += fmt.Sprintf(" (Azure: %s, %d/%d done)", job.Parts[0].AzureStatus, job.RequestCounts.Completed+job.RequestCounts.Failed, job.RequestCounts.Total)
		}
		if line != last {
			fmt.Fprintf(w, "    %s  %s\n", time.Now().Format("15:04:05"), line)
			last = line
		}
	}
	fmt.Fprintf(w, "  harvested (%s): ok %d, refused %d, failed %d, expired %d, cancelled %d; %d prompt + %d completion tokens, $%s estimated\n",
		job.Final, job.Outcomes["ok"], job.Outcomes["refused"], job.Outcomes["failed"], job.Outcomes["expired"], job.Outcomes["cancelled"],
		job.Usage.PromptTokens, job.Usage.CompletionTokens, job.Usage.Cost)
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
			fmt.Fprintf(w, "    %s  %-8s %s\n", l.ItemID, l.Outcome, clipText(l.Answer, 70))
		}
	}
	fmt.Fprintf(w, "    … GET /api/v1/batches/%s/results streams all %d\n", job.ID, job.Items)
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
