package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// rescoreBlob is where the re-scoring corpus goes, in contoso's area of the
// batch uploads container (the README's example uses the same name).
const rescoreBlob = "contoso/rescore/corpus.jsonl"

// runRescore is `make demo-rescore`: the README's re-scoring and cancel
// example, for real, against the stack make run started (its env file):
// it uploads a generated corpus with a SAS as curl would, submits it as a
// batch job, fires the poll, cancels the job once Azure is running it,
// follows it to harvested, prints the outcomes and the billed tokens, and
// shows that a second cancel is refused.
func runRescore(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("devstack rescore", flag.ContinueOnError)
	envFile := fs.String("env", ".run/env", "the env file make run wrote")
	items := fs.Int("items", 1000, "documents in the corpus")
	speed := fs.Float64("speed", 10, "the simulator's clock factor while the job runs (slow enough for the cancel to land mid-way)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *items < 1 || *items > 100_000 {
		return fmt.Errorf("-items %d: want 1 to 100000", *items)
	}
	env, err := readEnv(*envFile)
	if err != nil {
		return fmt.Errorf("read the stack's coordinates: %w", err)
	}
	for _, k := range []string{"OFFPATH_URL", "OFFPATH_FUNCTION_KEY", "OFFPATH_MASTER_KEY", "CONTOSO_KEY", "OFFPATH_UPLOADS_URL", "OFFPATH_UPLOADS_SAS", "AOAISIM_URL", "AOAISIM_KEY"} {
		if env[k] == "" {
			return fmt.Errorf("%s has no %s: run make run again", *envFile, k)
		}
	}
	return rescore(ctx, stdout, env, *items, *speed)
}

func rescore(ctx context.Context, w io.Writer, env map[string]string, items int, speed float64) error {
	host, fk, master, key := env["OFFPATH_URL"], env["OFFPATH_FUNCTION_KEY"], env["OFFPATH_MASTER_KEY"], env["CONTOSO_KEY"]
	fmt.Fprintf(w, "\n  Re-scoring a corpus, then stopping it (the README's example), against %s\n", host)

	done := step(w, 1, fmt.Sprintf("upload a corpus of %d documents to batch-uploads/%s with the SAS in .run/env", items, rescoreBlob))
	corpus := rescoreCorpus(items)
	if err := putBlob(ctx, env["OFFPATH_UPLOADS_URL"]+"/"+rescoreBlob+"?"+env["OFFPATH_UPLOADS_SAS"], corpus); err != nil {
		return err
	}
	done("%d bytes uploaded", len(corpus))

	// The simulator runs a 1,000-line batch in a tenth of a second at make
	// run's speed: slow its clock so that the cancel finds the job running.
	prev, err := simSpeed(ctx, env["AOAISIM_URL"], env["AOAISIM_KEY"], &speed)
	if err != nil {
		return err
	}
	defer func() { _, _ = simSpeed(context.WithoutCancel(ctx), env["AOAISIM_URL"], env["AOAISIM_KEY"], &prev) }()

	done = step(w, 2, "submit it as a batch job: POST /api/v1/batches with \"input_blob\"")
	body, _ := json.Marshal(map[string]any{"alias": "summarize", "input_blob": rescoreBlob, "max_tokens": 16,
		"system_prompt":   "Score the document from 1 to 5 for relevance to network outages.",
		"idempotency_key": "rescore-" + time.Now().UTC().Format("20060102T150405.000")})
	var job jobView
	status, err := call(ctx, http.MethodPost, host+"/api/v1/batches", fk, key, body, &job)
	if err != nil {
		return err
	}
	done("%d, job %s %s, %d items", status, job.ID, job.State, job.Items)

	start := time.Now()
	fmt.Fprintf(w, "\n  3. fire batch-poll every second until Azure is running the job (the simulator's clock slowed to ×%g meanwhile)\n", speed)
	running := func(j *jobView) bool {
		return j.State == "harvested" || j.State == "completed" ||
			(len(j.Parts) > 0 && j.Parts[0].AzureStatus == "in_progress" && j.RequestCounts.Completed > 0)
	}
	if err := follow(ctx, w, host, fk, master, key, &job, start, 2*time.Minute, running); err != nil {
		return err
	}

	done = step(w, 4, "cancel it: POST /api/v1/batches/"+job.ID+"/cancel")
	status, err = call(ctx, http.MethodPost, host+"/api/v1/batches/"+job.ID+"/cancel", fk, key, []byte(`{}`), &job)
	if err != nil {
		return fmt.Errorf("cancel: %w", err)
	}
	done("%d, state %s, cancel requested %v", status, job.State, job.CancelRequested)

	fmt.Fprintf(w, "\n  5. fire batch-poll every second until the job is harvested\n")
	if err := follow(ctx, w, host, fk, master, key, &job, start, 3*time.Minute, harvested); err != nil {
		return err
	}
	counts, err := countOutcomes(ctx, host, fk, key, job.ID)
	if err != nil {
		return err
	}
	o := job.Outcomes
	fmt.Fprintf(w, "     → harvested, final %s: %d ok, %d cancelled, %d refused, %d failed, %d expired; billed %d prompt + %d completion tokens ($%s estimated)\n",
		job.Final, o["ok"], o["cancelled"], o["refused"], o["failed"], o["expired"], job.Usage.PromptTokens, job.Usage.CompletionTokens, job.Usage.Cost)
	fmt.Fprintf(w, "     results (GET /api/v1/batches/%s/results): %s\n", job.ID, counts)

	done = step(w, 6, "cancel it again: POST /api/v1/batches/"+job.ID+"/cancel")
	res, err := send(ctx, http.MethodPost, host+"/api/v1/batches/"+job.ID+"/cancel", fk, key, []byte(`{}`))
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	if res.StatusCode != http.StatusConflict {
		return fmt.Errorf("a second cancel answered %d %s, want 409 job_finished", res.StatusCode, clipText(string(b), 200))
	}
	done("refused: %d %s: %s", res.StatusCode, e.Error.Code, e.Error.Message)
	fmt.Fprintln(w)
	return nil
}

// rescoreCorpus makes n documents about a network, one item a line; one in
// a hundred trips the simulator's content filter on its answer.
func rescoreCorpus(n int) []byte {
	sites := []string{"Lyon", "Leeds", "Porto", "Graz", "Turku", "Gdansk", "Bilbao", "Ghent"}
	events := []string{
		"The uplink to the core router dropped %d times overnight. Users saw file transfers stall.",
		"The printer queue on floor %d filled up again. Nothing else was reported.",
		"Wi-Fi in meeting room %d kept disconnecting laptops. The access point was replaced.",
		"A fibre cut took the site offline for %d minutes. Traffic failed over to the LTE backup.",
		"The quarterly audit of %d badge readers found no fault. The report was filed.",
	}
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		text := fmt.Sprintf("Incident note %d from %s. ", i, sites[i%len(sites)]) + fmt.Sprintf(events[i%len(events)], 1+i%9)
		if i%100 == 0 {
			text += " SIM_FILTER_COMPLETION"
		}
		line, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("doc-%04d", i), "prompt": text})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// putBlob uploads body as a block blob with one Put Blob call to a SAS URL,
// as curl would.
func putBlob(ctx context.Context, sasURL string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, sasURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("x-ms-blob-type", "BlockBlob")
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("upload the corpus: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1024))
		return fmt.Errorf("upload the corpus: status %d: %s", res.StatusCode, b)
	}
	return nil
}

// simSpeed sets the simulator's clock factor and returns the one before.
func simSpeed(ctx context.Context, simURL, key string, speed *float64) (float64, error) {
	var state struct {
		Speed float64 `json:"speed"`
	}
	do := func(method, path string, body []byte) error {
		req, err := http.NewRequestWithContext(ctx, method, simURL+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("api-key", key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("the simulator's clock: %w", err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("the simulator's clock: status %d", res.StatusCode)
		}
		return json.NewDecoder(res.Body).Decode(&state)
	}
	if err := do(http.MethodGet, "/_sim/state", nil); err != nil {
		return 0, err
	}
	prev := state.Speed
	body, _ := json.Marshal(map[string]float64{"speed": *speed})
	return prev, do(http.MethodPost, "/_sim/clock", body)
}

// countOutcomes reads a job's results and counts them by outcome.
func countOutcomes(ctx context.Context, host, fk, key, id string) (string, error) {
	res, err := send(ctx, http.MethodGet, host+"/api/v1/batches/"+id+"/results", fk, key, nil)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("results: status %d", res.StatusCode)
	}
	counts := map[string]int{}
	var order []string
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			Outcome string `json:"outcome"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return "", fmt.Errorf("results: %w", err)
		}
		if counts[l.Outcome] == 0 {
			order = append(order, l.Outcome)
		}
		counts[l.Outcome]++
	}
	if err := sc.Err(); err != nil {
		return "", errors.Join(errors.New("results"), err)
	}
	var parts []string
	for _, o := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
	}
	return strings.Join(parts, ", ") + " lines", nil
}
