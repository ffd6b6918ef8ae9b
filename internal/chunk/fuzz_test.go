package chunk_test

import (
	"bytes"
	"testing"

	"github.com/offpath/offpath/internal/chunk"
)

// FuzzSplitter checks on any input and any valid sizes that chunks cover
// the text exactly, respect the size and overlap bounds, and never split a
// rune of valid UTF-8.
func FuzzSplitter(f *testing.F) {
	f.Add([]byte("Hello. World.\n\nNext paragraph here."), 8, 2)
	f.Add(bytes.Repeat([]byte("é漢 "), 100), 9, 4)
	f.Add(bytes.Repeat([]byte{0xff, 0x80}, 100), 8, 0)
	f.Add([]byte{}, 16, 3)
	f.Fuzz(func(t *testing.T, text []byte, size, overlap int) {
		size = 8 + abs(size)%120
		overlap = abs(overlap) % (size / 2)
		if overlap == 0 {
			overlap = -1
		}
		opts := chunk.Options{Size: size, Overlap: overlap}
		collect(t, bytes.NewReader(text), text, opts)
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // math.MinInt
			return 0
		}
		return -n
	}
	return n
}
