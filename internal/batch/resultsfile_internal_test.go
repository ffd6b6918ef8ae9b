package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// closeCounter is a body that counts its closes.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

func readAllResults(t *testing.T, stored []byte) ([]ResultLine, error) {
	t.Helper()
	body := &closeCounter{Reader: bytes.NewReader(stored)}
	r, err := OpenResultsFile(body)
	if err != nil {
		if body.closed != 1 {
			t.Errorf("a failed open closed the body %d times, want once", body.closed)
		}
		return nil, err
	}
	var out []ResultLine
	dec := json.NewDecoder(r)
	for {
		var l ResultLine
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			r.Close()
			return out, err
		}
		out = append(out, l)
	}
	if err := r.Close(); err != nil || body.closed != 1 {
		t.Errorf("close: %v, body closed %d times, want once", err, body.closed)
	}
	return out, nil
}

func sampleResults(n int) []ResultLine {
	out := make([]ResultLine, n)
	for i := range out {
		out[i] = ResultLine{ItemID: fmt.Sprintf("ticket-%05d", i), Outcome: OK, Line: i,
			Answer:       "The customer's printer <b>& toner</b> is on fire again; " + strings.Repeat("escalate. ", i%13),
			FinishReason: "stop", Usage: &ResultUsage{PromptTokens: 40, CompletionTokens: int64(i % 90), TotalTokens: 40 + int64(i%90)}}
	}
	return out
}

func TestResultsFile_RoundTripsCompressed(t *testing.T) {
	want := sampleResults(2000)
	var stored, plain bytes.Buffer
	w := newResultWriter(&stored)
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	for i := range want {
		if err := w.write(&want[i]); err != nil {
			t.Fatal(err)
		}
		enc.Encode(&want[i])
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	if b := stored.Bytes(); len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("the results file starts %q, want gzip's magic", b[:min(len(b), 8)])
	}
	if stored.Len()*2 > plain.Len() {
		t.Errorf("the results file is %d bytes for %d of JSON lines: not compressed", stored.Len(), plain.Len())
	}
	got, err := readAllResults(t, stored.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Fatalf("read back %d lines, not the %d written", len(got), len(want))
	}
}

// A results file written before compression, plain JSON lines, reads as
// it always did: jobs harvested before an upgrade keep their results.
func TestResultsFile_ReadsPlainFiles(t *testing.T) {
	for _, plain := range []string{
		"",
		"{\"item_id\":\"a\",\"outcome\":\"ok\",\"part\":0,\"line\":0}\n",
		"{\"item_id\":\"a\",\"outcome\":\"ok\",\"part\":0,\"line\":0}\n{\"item_id\":\"b\",\"outcome\":\"failed\",\"part\":0,\"line\":1}\n",
	} {
		got, err := readAllResults(t, []byte(plain))
		if err != nil {
			t.Fatalf("%q: %v", plain, err)
		}
		if want := strings.Count(plain, "\n"); len(got) != want {
			t.Fatalf("%q: %d lines, want %d", plain, len(got), want)
		}
	}
}

// A damaged compressed file is an error, never a shorter list of results.
func TestResultsFile_DamagedIsAnError(t *testing.T) {
	var stored bytes.Buffer
	w := newResultWriter(&stored)
	lines := sampleResults(500)
	for i := range lines {
		w.write(&lines[i])
	}
	w.close()
	good := stored.Bytes()
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0xff
	for name, b := range map[string][]byte{
		"truncated":    good[:len(good)/2],
		"no trailer":   good[:len(good)-4],
		"bit flipped":  flipped,
		"bad header":   append([]byte{0x1f, 0x8b, 0x00}, good[3:]...),
		"magic only":   {0x1f, 0x8b},
		"garbage tail": append(bytes.Clone(good), 0x1f, 0x8b, 0x08, 0x00, 0xff),
	} {
		got, err := readAllResults(t, b)
		if err == nil {
			t.Errorf("%s: read %d lines and no error", name, len(got))
		}
	}
}
