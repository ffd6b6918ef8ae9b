package aoaisim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
)

// outputLine is one line of an output or error file.
type outputLine struct {
	ID       string        `json:"id,omitempty"`
	CustomID string        `json:"custom_id"`
	Response *lineResponse `json:"response"`
	Error    *lineError    `json:"error"`
}

type lineResponse struct {
	StatusCode int    `json:"status_code"`
	RequestID  string `json:"request_id"`
	Body       any    `json:"body"`
}

type lineError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// outputWriter streams output and error lines to two files on disk. Lines
// are held in a small window per file and written in a shuffled order, so
// each file's order differs from the input order while memory stays bounded
// by the window, never by the file.
type outputWriter struct {
	files  [2]*os.File // output, error
	bufs   [2]*bufio.Writer
	lines  [2]int
	bytes  [2]int64
	window [2][][]byte
	held   int
	size   int
	rng    *rand.Rand
}

func newOutputWriter(fs *fileStore, window int, seed uint64) (*outputWriter, error) {
	w := &outputWriter{size: window, rng: rand.New(rand.NewPCG(seed, seed^0x6f7574707574))}
	for i, pattern := range []string{"output-*.jsonl", "errors-*.jsonl"} {
		f, err := fs.create(pattern)
		if err != nil {
			w.abort()
			return nil, err
		}
		w.files[i], w.bufs[i] = f, bufio.NewWriterSize(f, 256<<10)
	}
	return w, nil
}

// add queues one line; failed lines go to the error file.
func (w *outputWriter) add(failed bool, line outputLine) error {
	data, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("encode output line: %w", err)
	}
	i := 0
	if failed {
		i = 1
	}
	w.window[i] = append(w.window[i], append(data, '\n'))
	w.held++
	if w.held >= w.size {
		return w.flush()
	}
	return nil
}

// flush writes each file's window in a shuffled order that is never the
// identity (when it holds two lines or more).
func (w *outputWriter) flush() error {
	for i := range w.window {
		lines := w.window[i]
		if n := len(lines); n > 1 {
			perm := w.rng.Perm(n)
			if slices.IsSorted(perm) {
				perm[0], perm[1] = perm[1], perm[0]
			}
			shuffled := make([][]byte, n)
			for to, from := range perm {
				shuffled[to] = lines[from]
			}
			lines = shuffled
		}
		for _, data := range lines {
			if _, err := w.bufs[i].Write(data); err != nil {
				return fmt.Errorf("write output line: %w", err)
			}
			w.lines[i]++
			w.bytes[i] += int64(len(data))
		}
		clear(w.window[i])
		w.window[i] = w.window[i][:0]
	}
	w.held = 0
	return nil
}

// close flushes everything and closes both files.
func (w *outputWriter) close() error {
	errs := []error{w.flush()}
	for i := range w.files {
		errs = append(errs, w.bufs[i].Flush(), w.files[i].Close())
	}
	return errors.Join(errs...)
}

// abort closes and removes both files.
func (w *outputWriter) abort() {
	for _, f := range w.files {
		if f != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}
}
