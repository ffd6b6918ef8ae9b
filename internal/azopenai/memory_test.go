package azopenai_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/local/aoaisim"
)

// bigInput writes an input part of about size bytes (lines of ~1.5 KB).
func bigInput(t testing.TB, dir string, size int64) input {
	t.Helper()
	prompt := strings.Repeat("The printer on floor three is on fire again. ", 30) // ~1.4 KB
	n := int(size / 1500)
	all := make([]batchfile.Item, n)
	for i := range all {
		all[i] = chatItem("tenant", fmt.Sprintf("item-%d", i), prompt)
	}
	return writeInput(t, dir, "big", batchDep, all)
}

// allocated runs f and returns the bytes allocated meanwhile by the whole
// process: client, transport and in-process simulator together.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestMemory_StreamsUploadAndDownload uploads and downloads a 16 MB file on
// every surface and credential and checks that the bytes allocated stay a
// small fraction of the file: nothing holds it whole. (openai-go's Files.New
// alone would allocate at least the file's size; azure.WithTokenCredential
// would copy a body that is not seekable.) Not parallel, so that no other
// test allocates meanwhile.
func TestMemory_StreamsUploadAndDownload(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 16 MB per surface")
	}
	const size = 16 << 20
	ctx := testContext(t)
	in := bigInput(t, t.TempDir(), size)
	for _, sf := range surfaces() {
		t.Run(sf.name, func(t *testing.T) {
			env := newSim(t, simConfig(), nil)
			c := env.client(t, sf.cfg)
			var file batch.AzureFile
			up := allocated(func() { file = upload(t, ctx, c, in) })
			if file.Bytes != in.part.Bytes {
				t.Fatalf("uploaded %d bytes, want %d", file.Bytes, in.part.Bytes)
			}
			var got int64
			down := allocated(func() {
				body, err := c.OpenFileContent(ctx, file.ID)
				if err != nil {
					t.Fatalf("OpenFileContent: %v", err)
				}
				got, err = io.Copy(io.Discard, body)
				if err != nil {
					t.Fatalf("read content: %v", err)
				}
				if err := body.Close(); err != nil {
					t.Fatalf("close content: %v", err)
				}
			})
			if got != in.part.Bytes {
				t.Errorf("downloaded %d bytes, want %d", got, in.part.Bytes)
			}
			t.Logf("%d MB file: upload allocated %d KB, download %d KB", in.part.Bytes>>20, up>>10, down>>10)
			if limit := uint64(in.part.Bytes / 8); up > limit || down > limit {
				t.Errorf("allocated %d B (upload) and %d B (download) for a %d B file, want under %d", up, down, in.part.Bytes, limit)
			}
		})
	}
}

// TestUpload_ShortSource: a source shorter than the size given is refused by
// the transport rather than sent with a wrong length, and no file is stored.
func TestUpload_ShortSource(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	env := newSim(t, simConfig(), nil)
	c := env.client(t, azopenai.BatchConfig{APIKey: aoaisim.DefaultKey, Surface: azopenai.Classic})
	in := writeInput(t, t.TempDir(), "short", batchDep, items(3, "t"))
	f, err := os.Open(in.path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer f.Close()
	if _, err := c.UploadFile(ctx, filepath.Base(in.path), f, in.part.Bytes+10); err == nil {
		t.Error("UploadFile with a size larger than the source succeeded")
	}
	if n := len(env.sim.State().Files); n != 0 {
		t.Errorf("simulator stored %d files from a short upload", n)
	}
	if _, err := c.UploadFile(ctx, "x.jsonl", strings.NewReader(""), -1); err == nil {
		t.Error("UploadFile with an unknown size succeeded")
	}
}
