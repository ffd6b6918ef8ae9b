package aoaisim_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

const fourteenDays = 14 * 24 * 3600

func TestFiles_Lifecycle(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{})
	ctx := context.Background()
	content := joinLines(chatLines(3, batchDep))
	for _, c := range s.clients() {
		t.Run(c.name, func(t *testing.T) {
			var raw *http.Response
			f, err := c.client.Files.New(ctx, openai.FileNewParams{
				File: openai.File(strings.NewReader(content), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch,
				ExpiresAfter: openai.FileNewParamsExpiresAfter{Seconds: fourteenDays},
			}, option.WithResponseInto(&raw))
			if err != nil {
				t.Fatalf("Files.New: %v", err)
			}
			wantStatus := map[string]int{"classic": 201, "v1": 200}[c.name]
			if raw.StatusCode != wantStatus {
				t.Errorf("upload status = %d, want %d", raw.StatusCode, wantStatus)
			}
			if !strings.HasPrefix(f.ID, "file-") || f.Bytes != int64(len(content)) || f.Status != "processed" ||
				f.Purpose != "batch" || f.Filename != "in.jsonl" || f.ExpiresAt != f.CreatedAt+fourteenDays {
				t.Errorf("file = %+v", f)
			}
			got, err := c.client.Files.Get(ctx, f.ID)
			if err != nil || got.ID != f.ID || got.Bytes != f.Bytes {
				t.Errorf("Files.Get = %+v, %v", got, err)
			}
			resp, err := c.client.Files.Content(ctx, f.ID)
			if err != nil {
				t.Fatalf("Files.Content: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != content {
				t.Errorf("content = %q, want the upload", body)
			}
			found := false
			iter := c.client.Files.ListAutoPaging(ctx, openai.FileListParams{Purpose: openai.String("batch"), Limit: openai.Int(1)})
			for iter.Next() {
				found = found || iter.Current().ID == f.ID
			}
			if iter.Err() != nil || !found {
				t.Errorf("list: found %v, err %v", found, iter.Err())
			}
			del, err := c.client.Files.Delete(ctx, f.ID)
			if err != nil || !del.Deleted || del.ID != f.ID {
				t.Fatalf("Files.Delete = %+v, %v", del, err)
			}
			_, err = c.client.Files.Get(ctx, f.ID)
			if e := apiError(t, err); e.StatusCode != 404 {
				t.Errorf("get after delete = %d, want 404", e.StatusCode)
			}
		})
	}
}

func TestFiles_Validation(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{Files: aoaisim.FilesConfig{MaxBytes: 1000}})
	tests := []struct {
		name    string
		content string
		purpose openai.FilePurpose
		expiry  int64
		param   string
	}{
		{"too large", strings.Repeat("x", 1001), openai.FilePurposeBatch, 0, "file"},
		{"expiry below 14 days", "{}\n", openai.FilePurposeBatch, 3600, "expires_after.seconds"},
		{"expiry above 30 days", "{}\n", openai.FilePurposeBatch, 31 * 24 * 3600, "expires_after.seconds"},
		{"unknown purpose", "{}\n", openai.FilePurpose("nonsense"), 0, "purpose"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			params := openai.FileNewParams{File: openai.File(strings.NewReader(tt.content), "x.jsonl", "application/jsonl"), Purpose: tt.purpose}
			if tt.expiry > 0 {
				params.ExpiresAfter = openai.FileNewParamsExpiresAfter{Seconds: tt.expiry}
			}
			_, err := s.classic.Files.New(context.Background(), params)
			e := apiError(t, err)
			if e.StatusCode != 400 || e.Param != tt.param {
				t.Errorf("error = %d param %q, want 400 %q (%s)", e.StatusCode, e.Param, tt.param, e.Message)
			}
		})
	}
	// The limit is inclusive.
	upload(t, s.classic, strings.Repeat("x", 1000), 0)
}

func TestFiles_CapWithoutExpiry(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{}) // default cap: 500 batch files without expiry
	parallel(500, 8, func() {
		if _, err := s.v1.Files.New(context.Background(), openai.FileNewParams{
			File: openai.File(strings.NewReader("{}\n"), "x.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch,
		}); err != nil {
			t.Errorf("upload: %v", err)
		}
	})
	_, err := s.v1.Files.New(context.Background(), openai.FileNewParams{
		File: openai.File(strings.NewReader("{}\n"), "x.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch,
	})
	if e := apiError(t, err); e.StatusCode != 400 {
		t.Fatalf("501st upload: %d, want 400", e.StatusCode)
	}
	// Files with an expiry have their own, larger cap.
	upload(t, s.v1, "{}\n", fourteenDays)
}

func TestFiles_ExpiryAndPending(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{Files: aoaisim.FilesConfig{ProcessingTime: aoaisim.Duration(30 * time.Second)}})
	ctx := context.Background()
	id := upload(t, s.classic, "{}\n", fourteenDays)
	f, err := s.classic.Files.Get(ctx, id)
	if err != nil || f.Status != "pending" {
		t.Fatalf("status = %q (%v), want pending", f.Status, err)
	}
	s.clock.Advance(30 * time.Second)
	if f, _ = s.classic.Files.Get(ctx, id); f.Status != "processed" {
		t.Errorf("status after processing time = %q, want processed", f.Status)
	}
	s.clock.Advance(fourteenDays * time.Second)
	_, err = s.classic.Files.Get(ctx, id)
	if e := apiError(t, err); e.StatusCode != 404 {
		t.Errorf("expired file: %d, want 404", e.StatusCode)
	}
}

func TestAPIVersionRequired(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{})
	c := openai.NewClient(option.WithBaseURL(s.url+"/openai/"), option.WithHeader("api-key", aoaisim.DefaultKey), option.WithMaxRetries(0))
	_, err := c.Files.List(context.Background(), openai.FileListParams{})
	if e := apiError(t, err); e.StatusCode != 404 || e.Code != "404" {
		t.Errorf("classic call without api-version = %d %q, want 404", e.StatusCode, e.Code)
	}
}
