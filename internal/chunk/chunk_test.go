package chunk_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/offpath/offpath/internal/chunk"
)

// collect splits text and checks the invariants every split must keep.
func collect(t testing.TB, r io.Reader, text []byte, opts chunk.Options) []chunk.Chunk {
	t.Helper()
	s, err := chunk.New(r, opts)
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	var got []chunk.Chunk
	for c, err := range s.All() {
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		got = append(got, c)
	}
	checkInvariants(t, text, got, opts)
	return got
}

func checkInvariants(t testing.TB, text []byte, got []chunk.Chunk, opts chunk.Options) {
	t.Helper()
	size, overlap := opts.Size, opts.Overlap
	if size == 0 {
		size = chunk.DefaultSize
	}
	if overlap == 0 {
		overlap = chunk.DefaultOverlap
	}
	overlap = max(overlap, 0)
	var rebuilt bytes.Buffer
	var end int64
	valid := utf8.Valid(text)
	for i, c := range got {
		if c.Index != i {
			t.Fatalf("chunk %d: Index %d", i, c.Index)
		}
		if c.Tokens > size || len(c.Text) > 4*size {
			t.Fatalf("chunk %d: %d tokens, %d bytes; size is %d tokens", i, c.Tokens, len(c.Text), size)
		}
		if c.Overlap > 4*overlap || c.Overlap < 0 {
			t.Fatalf("chunk %d: overlap %d bytes, limit %d", i, c.Overlap, 4*overlap)
		}
		if c.Overlap >= len(c.Text) {
			t.Fatalf("chunk %d: overlap %d of %d bytes: nothing new", i, c.Overlap, len(c.Text))
		}
		if c.Offset+int64(c.Overlap) != end {
			t.Fatalf("chunk %d: offset %d + overlap %d, previous ended at %d", i, c.Offset, c.Overlap, end)
		}
		if c.Offset+int64(len(c.Text)) > int64(len(text)) || string(text[c.Offset:c.Offset+int64(len(c.Text))]) != c.Text {
			t.Fatalf("chunk %d: text is not the text at offset %d", i, c.Offset)
		}
		if valid && !utf8.ValidString(c.Text) {
			t.Fatalf("chunk %d: splits a rune", i)
		}
		rebuilt.WriteString(c.Text[c.Overlap:])
		end = c.Offset + int64(len(c.Text))
	}
	if !bytes.Equal(rebuilt.Bytes(), text) {
		t.Fatalf("chunks rebuild %d bytes, text has %d", rebuilt.Len(), len(text))
	}
}

func TestSplitter(t *testing.T) {
	t.Parallel()
	para := strings.Repeat("Words in a sentence. ", 14) + "\n\n" // 296 bytes
	tests := []struct {
		name       string
		text       string
		opts       chunk.Options
		wantChunks int    // -1: don't check
		wantSuffix string // every chunk but the last ends with it
	}{
		{"empty", "", chunk.Options{}, 0, ""},
		{"short", "Hello, world.", chunk.Options{}, 1, ""},
		{"exactly one chunk", strings.Repeat("a", 2048), chunk.Options{}, 1, ""},
		{"one byte over", strings.Repeat("a", 2049), chunk.Options{}, 2, ""},
		{"paragraphs", strings.Repeat(para, 40), chunk.Options{Size: 256, Overlap: 32}, -1, "\n\n"},
		{"sentences", strings.Repeat("This is one sentence, it goes on. ", 200), chunk.Options{Size: 64, Overlap: 8}, -1, ". "},
		{"lines", strings.Repeat("a line without a full stop\n", 300), chunk.Options{Size: 64, Overlap: 8}, -1, "\n"},
		{"words", strings.Repeat("word ", 3000), chunk.Options{Size: 64, Overlap: 8}, -1, " "},
		{"no overlap", strings.Repeat("word ", 3000), chunk.Options{Size: 64, Overlap: -1}, -1, " "},
		{"no spaces", strings.Repeat("x", 10000), chunk.Options{Size: 64, Overlap: 8}, -1, ""},
		{"two-byte runes without spaces", strings.Repeat("é", 5000), chunk.Options{Size: 63, Overlap: 7}, -1, ""},
		{"three-byte runes without spaces", strings.Repeat("漢", 5000), chunk.Options{Size: 61, Overlap: 9}, -1, ""},
		{"four-byte runes without spaces", strings.Repeat("𝄞", 5000), chunk.Options{Size: 63, Overlap: 9}, -1, ""},
		{"ideographic sentences", strings.Repeat("漢字の文です。", 500), chunk.Options{Size: 64, Overlap: 8}, -1, "。"},
		{"invalid UTF-8", strings.Repeat("\x80\xbf\xff", 3000), chunk.Options{Size: 64, Overlap: 8}, -1, ""},
		{"whitespace only", strings.Repeat(" ", 5000), chunk.Options{Size: 64, Overlap: 8}, -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := collect(t, strings.NewReader(tt.text), []byte(tt.text), tt.opts)
			if tt.wantChunks >= 0 && len(got) != tt.wantChunks {
				t.Errorf("%d chunks, want %d", len(got), tt.wantChunks)
			}
			if tt.wantSuffix == "" {
				return
			}
			for i, c := range got[:max(len(got)-1, 0)] {
				if !strings.HasSuffix(c.Text, tt.wantSuffix) {
					t.Errorf("chunk %d ends %q, want a cut after %q", i, c.Text[max(0, len(c.Text)-20):], tt.wantSuffix)
				}
			}
		})
	}
}

func TestSplitter_OverlapStartsAtWord(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("alpha beta gamma delta ", 400)
	got := collect(t, strings.NewReader(text), []byte(text), chunk.Options{Size: 64, Overlap: 16})
	for _, c := range got[1:] {
		if c.Overlap == 0 {
			t.Errorf("chunk %d has no overlap", c.Index)
		}
		if c.Offset > 0 && text[c.Offset-1] != ' ' {
			t.Errorf("chunk %d starts mid-word: %q", c.Index, c.Text[:10])
		}
	}
}

func TestSplitter_SmallReads(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("Some text, é漢𝄞. ", 2000)
	a := collect(t, strings.NewReader(text), []byte(text), chunk.Options{Size: 100, Overlap: 20})
	b := collect(t, iotest.OneByteReader(strings.NewReader(text)), []byte(text), chunk.Options{Size: 100, Overlap: 20})
	if len(a) != len(b) {
		t.Fatalf("%d chunks from whole reads, %d from one-byte reads", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("chunk %d differs between read sizes", i)
		}
	}
}

func TestSplitter_SingleLine10MB(t *testing.T) {
	t.Parallel()
	n := 1 << 20 // 11 MiB, one line
	if raceEnabled {
		n /= 8 // the same single-goroutine path, at a size the race detector gets through quickly
	}
	text := bytes.Repeat([]byte("abcdefghé "), n)
	got := collect(t, bytes.NewReader(text), text, chunk.Options{})
	if want := len(text) / (4 * chunk.DefaultSize); len(got) < want {
		t.Errorf("%d chunks, want at least %d", len(got), want)
	}
}

func TestSplitter_ReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("storage hiccup")
	text := strings.Repeat("word ", 5000)
	r := io.MultiReader(strings.NewReader(text), iotest.ErrReader(boom))
	s, err := chunk.New(r, chunk.Options{Size: 64, Overlap: 8})
	if err != nil {
		t.Fatal(err)
	}
	var end int64
	var last error
	for c, err := range s.All() {
		if err != nil {
			last = err
			break
		}
		end = c.Offset + int64(len(c.Text))
	}
	if !errors.Is(last, boom) {
		t.Errorf("error = %v, want %v", last, boom)
	}
	if end >= int64(len(text)) {
		t.Errorf("chunks cover the text up to %d, want the tail before the error left out", end)
	}
	if _, err := s.Next(); !errors.Is(err, boom) {
		t.Errorf("Next after the error = %v, want it again", err)
	}
}

func TestNew_Options(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts chunk.Options
		ok   bool
	}{
		{"defaults", chunk.Options{}, true},
		{"small", chunk.Options{Size: 8, Overlap: 3}, true},
		{"too small", chunk.Options{Size: 7}, false},
		{"overlap half", chunk.Options{Size: 100, Overlap: 50}, false},
		{"overlap beyond default size", chunk.Options{Overlap: 300}, false},
		{"no overlap", chunk.Options{Size: 100, Overlap: -1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := chunk.New(strings.NewReader(""), tt.opts)
			if (err == nil) != tt.ok {
				t.Errorf("New(%+v) = %v, want ok %v", tt.opts, err, tt.ok)
			}
		})
	}
}

func TestSplitter_StopEarly(t *testing.T) {
	t.Parallel()
	s, err := chunk.New(strings.NewReader(strings.Repeat("word ", 5000)), chunk.Options{Size: 64, Overlap: 8})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for range s.All() {
		if n++; n == 3 {
			break
		}
	}
	c, err := s.Next()
	if err != nil || c.Index != 3 {
		t.Errorf("Next after stopping at 3 = %d, %v; want chunk 3", c.Index, err)
	}
}
