package azopenai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/poll"
)

const (
	batchDep = "gpt-4o-mini-batch"
	// speed makes the simulator's 2-minute validation take 60 ms.
	speed = 2000
)

// entraCred stands in for an azidentity credential; the simulator accepts
// any bearer token when AcceptAnyBearer is set.
type entraCred struct{}

func (entraCred) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "entra-token", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// surface is one way of reaching the resource.
type surface struct {
	name string
	cfg  azopenai.BatchConfig
}

// surfaces are the four combinations of surface and credential.
func surfaces() []surface {
	key := azopenai.BatchConfig{APIKey: aoaisim.DefaultKey}
	entra := azopenai.BatchConfig{Credential: entraCred{}}
	var out []surface
	for _, s := range []azopenai.Surface{azopenai.Classic, azopenai.V1} {
		for name, auth := range map[string]azopenai.BatchConfig{"key": key, "entra": entra} {
			auth.Surface = s
			out = append(out, surface{name: string(s) + "/" + name, cfg: auth})
		}
	}
	return out
}

// simEnv is a simulator on a loopback port, optionally behind a wrapper.
type simEnv struct {
	sim *aoaisim.Server
	url string
}

func simConfig(deps ...aoaisim.Deployment) aoaisim.Config {
	sp := float64(speed)
	if len(deps) == 0 {
		deps = []aoaisim.Deployment{{Name: batchDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeGlobalBatch}}
	}
	return aoaisim.Config{Deployments: deps, AcceptAnyBearer: true, Speed: &sp}
}

func newSim(t testing.TB, cfg aoaisim.Config, wrap func(*aoaisim.Server, http.Handler) http.Handler) *simEnv {
	t.Helper()
	sim, err := aoaisim.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatalf("aoaisim.New: %v", err)
	}
	var h http.Handler = sim
	if wrap != nil {
		h = wrap(sim, sim)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		if err := sim.Close(); err != nil {
			t.Errorf("sim.Close: %v", err)
		}
	})
	return &simEnv{sim: sim, url: ts.URL}
}

func (e *simEnv) client(t testing.TB, cfg azopenai.BatchConfig) *azopenai.BatchClient {
	t.Helper()
	cfg.Endpoint, cfg.AllowLoopbackHTTP = e.url, true
	c, err := azopenai.NewBatchClient(cfg, nil, zerolog.Nop())
	if err != nil {
		t.Fatalf("azopenai.New: %v", err)
	}
	return c
}

// input is a written batch input part on disk.
type input struct {
	path  string
	part  batchfile.Part
	index *batchfile.IndexReader
	refs  map[string]batchfile.Item // custom_id → item
}

// writeInput writes items as one part (limits permitting) under dir.
func writeInput(t testing.TB, dir, job, deployment string, items []batchfile.Item) input {
	t.Helper()
	in := filepath.Join(dir, job+".jsonl")
	ix := filepath.Join(dir, job+".index.jsonl")
	var files []*os.File
	w, err := batchfile.NewWriter(batchfile.WriterConfig{Job: job, Deployment: deployment}, func(n int) (io.Writer, io.Writer, error) {
		if n > 0 {
			return nil, nil, errors.New("more than one part")
		}
		fi, err := os.Create(in)
		if err != nil {
			return nil, nil, err
		}
		fx, err := os.Create(ix)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, fi, fx)
		return fi, fx, nil
	})
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	refs := map[string]batchfile.Item{}
	for _, it := range items {
		ref, err := w.Add(it)
		if err != nil {
			t.Fatalf("Add: %v", err)
		}
		refs[ref.String()] = it
	}
	parts, err := w.Close()
	if err != nil {
		t.Fatalf("writer Close: %v", err)
	}
	for _, f := range files {
		if err := f.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
	}
	idx := batchfile.NewIndexReader(job, 0, func(off int64) (io.ReadCloser, error) {
		f, err := os.Open(ix)
		if err != nil {
			return nil, err
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	})
	t.Cleanup(func() { idx.Close() })
	return input{path: in, part: parts[0], index: idx, refs: refs}
}

func upload(t testing.TB, ctx context.Context, c *azopenai.BatchClient, in input) batch.AzureFile {
	t.Helper()
	f, err := os.Open(in.path)
	if err != nil {
		t.Fatalf("open input: %v", err)
	}
	defer f.Close()
	file, err := c.UploadFile(ctx, filepath.Base(in.path), f, in.part.Bytes)
	if err != nil {
		t.Fatalf("UploadFile: %v", err)
	}
	return file
}

// waitFiles polls until the batch is terminal with its files reported.
func waitFiles(t testing.TB, ctx context.Context, c *azopenai.BatchClient, id string) batch.AzureBatch {
	t.Helper()
	var b batch.AzureBatch
	if !poll.Within(30*time.Second, func() bool {
		var err error
		if b, err = c.GetBatch(ctx, id); err != nil {
			t.Fatalf("GetBatch: %v", err)
		}
		return b.FilesReady()
	}) {
		t.Fatalf("batch %s still %s after 30 s", id, b.Status)
	}
	return b
}

// readResults downloads and parses a file; "" gives nothing.
func readResults(t testing.TB, ctx context.Context, c *azopenai.BatchClient, fileID string) []batchfile.Result {
	t.Helper()
	if fileID == "" {
		return nil
	}
	body, err := c.OpenFileContent(ctx, fileID)
	if err != nil {
		t.Fatalf("OpenFileContent(%s): %v", fileID, err)
	}
	defer body.Close()
	r := batchfile.NewReader(body, 0)
	var out []batchfile.Result
	for {
		res, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("parse %s: %v", fileID, err)
		}
		out = append(out, res)
	}
}

func chatItem(tenant, id, prompt string) batchfile.Item {
	return batchfile.Item{Tenant: tenant, ItemID: id, MaxTokens: 32,
		Messages: []batchfile.Message{{Role: "system", Content: "Summarise the ticket."}, {Role: "user", Content: prompt}}}
}

func items(n int, tenant string) []batchfile.Item {
	out := make([]batchfile.Item, n)
	for i := range out {
		out[i] = chatItem(tenant, fmt.Sprintf("item-%d", i), fmt.Sprintf("Ticket %d: the printer is on fire again.", i))
	}
	return out
}

func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
