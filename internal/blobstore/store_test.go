package blobstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/object"
)

var shared azurite.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// store returns a Store and a container name of its own.
func store(t *testing.T) (*blobstore.Store, string) {
	t.Helper()
	c, err := azblob.NewClientFromConnectionString(shared.Get(t).ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return blobstore.New(c, blobstore.Options{BlockSize: 1 << 20}), "c" + azurite.Suffix()
}

func TestStore_WriteWholeOrNothing(t *testing.T) {
	t.Parallel()
	s, c := store(t)
	ctx := context.Background()
	data := strings.Repeat("0123456789abcdef", 300_000) // 4.8 MB: several blocks
	tests := []struct {
		name   string
		abort  bool
		stored bool
	}{
		{"committed on Close", false, true},
		{"nothing after Abort", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "dir/" + strings.ReplaceAll(tt.name, " ", "-") + ".jsonl"
			w, err := s.Create(ctx, c, name, map[string]string{"kind": "test"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(w, strings.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(data))
			if w.Size() != int64(len(data)) || w.SHA256() != hex.EncodeToString(sum[:]) {
				t.Errorf("Size %d SHA256 %s, want %d and the data's", w.Size(), w.SHA256(), len(data))
			}
			if tt.abort {
				w.Abort(errors.New("test"))
			} else if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			body, info, err := s.Open(ctx, c, name)
			if !tt.stored {
				if !errors.Is(err, object.ErrNotFound) {
					t.Errorf("Open after Abort = %v, want ErrNotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer body.Close()
			got, err := io.ReadAll(body)
			if err != nil || string(got) != data || info.Size != int64(len(data)) || info.Metadata["kind"] != "test" {
				t.Errorf("read back %d bytes (%v), info %+v", len(got), err, info)
			}
		})
	}
}

// TestStore_CreateSized checks that each writer stages blocks of its own
// size: the store's for Create, the one given for CreateSized.
func TestStore_CreateSized(t *testing.T) {
	t.Parallel()
	s, c := store(t) // 1 MiB blocks
	raw, err := azblob.NewClientFromConnectionString(shared.Get(t).ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := strings.Repeat("0123456789abcdef", 300_000) // 4.8 MB
	tests := []struct {
		name   string
		create func(name string) (object.Writer, error)
		want   int64
	}{
		{"create", func(name string) (object.Writer, error) { return s.Create(ctx, c, name, nil) }, 1 << 20},
		{"sized", func(name string) (object.Writer, error) { return s.CreateSized(ctx, c, name, nil, 2<<20) }, 2 << 20},
		{"sized-zero", func(name string) (object.Writer, error) { return s.CreateSized(ctx, c, name, nil, 0) }, 1 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := tt.create(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(w, strings.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			list, err := raw.ServiceClient().NewContainerClient(c).NewBlockBlobClient(tt.name).
				GetBlockList(ctx, blockblob.BlockListTypeCommitted, nil)
			if err != nil {
				t.Fatal(err)
			}
			var sizes []int64
			for _, b := range list.CommittedBlocks {
				sizes = append(sizes, *b.Size)
			}
			n := int64(len(data))
			want := slices.Repeat([]int64{tt.want}, int(n/tt.want))
			if rest := n % tt.want; rest > 0 {
				want = append(want, rest)
			}
			if !slices.Equal(sizes, want) {
				t.Errorf("committed blocks %v, want %v", sizes, want)
			}
		})
	}
}

func TestStore_ListDeleteStat(t *testing.T) {
	t.Parallel()
	s, c := store(t)
	ctx := context.Background()
	for _, n := range []string{"a/1", "a/2", "b/1"} {
		w, err := s.Create(ctx, c, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(w, n)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if names, err := s.List(ctx, c, "a/"); err != nil || len(names) != 2 {
		t.Errorf("List a/ = %v, %v", names, err)
	}
	if err := s.DeletePrefix(ctx, c, "a/"); err != nil {
		t.Fatal(err)
	}
	if names, _ := s.List(ctx, c, ""); len(names) != 1 || names[0] != "b/1" {
		t.Errorf("after DeletePrefix: %v", names)
	}
	if err := s.Delete(ctx, c, "a/1"); err != nil {
		t.Errorf("Delete of a missing blob = %v, want nil", err)
	}
	if _, err := s.Stat(ctx, c, "a/1"); !errors.Is(err, object.ErrNotFound) {
		t.Errorf("Stat of a missing blob = %v, want ErrNotFound", err)
	}
	if info, err := s.Stat(ctx, c, "b/1"); err != nil || info.Size != 3 {
		t.Errorf("Stat = %+v, %v", info, err)
	}
	if body, err := s.OpenAt(ctx, c, "b/1", 1); err != nil {
		t.Errorf("OpenAt: %v", err)
	} else if rest, err := io.ReadAll(body); err != nil || string(rest) != "/1" {
		t.Errorf("OpenAt(1) read %q, %v; want the bytes from offset 1", rest, err)
	}
	if _, err := s.OpenAt(ctx, c, "a/1", 1); !errors.Is(err, object.ErrNotFound) {
		t.Errorf("OpenAt of a missing blob = %v, want ErrNotFound", err)
	}
	if names, err := s.List(ctx, "nosuchcontainer", ""); err != nil || len(names) != 0 {
		t.Errorf("List of a missing container = %v, %v", names, err)
	}
}
