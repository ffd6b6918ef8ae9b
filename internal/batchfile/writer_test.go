package batchfile_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/batchfile"
)

// parts collects what a Writer writes, in memory (tests only).
type parts struct {
	inputs  []*bytes.Buffer
	indexes []*bytes.Buffer
}

func (p *parts) open(n int) (io.Writer, io.Writer, error) {
	if n != len(p.inputs) {
		return nil, nil, fmt.Errorf("opened part %d after %d parts", n, len(p.inputs))
	}
	p.inputs = append(p.inputs, new(bytes.Buffer))
	p.indexes = append(p.indexes, new(bytes.Buffer))
	return p.inputs[n], p.indexes[n], nil
}

func newWriter(t *testing.T, limits batchfile.Limits) (*batchfile.Writer, *parts) {
	t.Helper()
	p := &parts{}
	w, err := batchfile.NewWriter(batchfile.WriterConfig{Job: "job1", Deployment: "gpt-4o-mini-batch", Limits: limits}, p.open)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	return w, p
}

func item(tenant, id, prompt string) batchfile.Item {
	return batchfile.Item{Tenant: tenant, ItemID: id, MaxTokens: 64,
		Messages: []batchfile.Message{{Role: "system", Content: "Summarise."}, {Role: "user", Content: prompt}}}
}

func TestWriter_LineFormat(t *testing.T) {
	t.Parallel()
	w, p := newWriter(t, batchfile.Limits{})
	temp := 0.2
	it := item("t1", "a<b>&", "héllo <world>\n\"quoted\"")
	it.Temperature = &temp
	it.Extra = map[string]json.RawMessage{"seed": json.RawMessage("7"), "response_format": json.RawMessage(`{ "type" : "json_object" }`)}
	ref, err := w.Add(it)
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	if _, err := w.Add(item("t1", "b", "second")); err != nil {
		t.Fatalf("Add: %v", err)
	}
	got, err := w.Close()
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	data := p.inputs[0].Bytes()
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		t.Error("input starts with a UTF-8 BOM")
	}
	if bytes.Contains(data, []byte("\r")) || !bytes.HasSuffix(data, []byte("\n")) || bytes.Count(data, []byte("\n")) != 2 {
		t.Errorf("input is not two \\n-terminated lines: %q", data)
	}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	want := `{"custom_id":"` + ref.String() + `","method":"POST","url":"/chat/completions","body":{"model":"gpt-4o-mini-batch",` +
		`"messages":[{"role":"system","content":"Summarise."},{"role":"user","content":"héllo <world>\n\"quoted\""}],` +
		`"max_tokens":64,"temperature":0.2,"response_format":{"type":"json_object"},"seed":7}}`
	if string(first) != want {
		t.Errorf("line =\n%s\nwant\n%s", first, want)
	}
	if len(got) != 1 || got[0].Lines != 2 || got[0].Bytes != int64(len(data)) || got[0].EstimatedTokens != (int64(len(data))+3)/4 {
		t.Errorf("parts = %+v, want one part of 2 lines and %d bytes", got, len(data))
	}
}

func TestWriter_SplitsAtLineLimit(t *testing.T) {
	t.Parallel()
	w, p := newWriter(t, batchfile.Limits{MaxLines: 3})
	for i := range 7 {
		if _, err := w.Add(item("t", fmt.Sprint(i), "x")); err != nil {
			t.Fatalf("Add %d: %v", i, err)
		}
	}
	got, err := w.Close()
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantLines := []int{3, 3, 1}
	if len(got) != len(wantLines) || len(p.inputs) != len(wantLines) {
		t.Fatalf("got %d parts (%d opened), want %d", len(got), len(p.inputs), len(wantLines))
	}
	for i, part := range got {
		data := p.inputs[i].Bytes()
		if part.Index != i || part.Lines != wantLines[i] || bytes.Count(data, []byte("\n")) != wantLines[i] || part.Bytes != int64(len(data)) {
			t.Errorf("part %d = %+v with %d bytes written, want %d lines", i, part, len(data), wantLines[i])
		}
	}
}

func TestWriter_DefaultLimitSplitsAt100000Lines(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,001 lines")
	}
	t.Parallel()
	p := &countingParts{}
	w, err := batchfile.NewWriter(batchfile.WriterConfig{Job: "j", Deployment: "d"}, p.open)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	it := item("t", "i", "x")
	for i := range batchfile.DefaultMaxLines + 1 {
		if _, err := w.Add(it); err != nil {
			t.Fatalf("Add %d: %v", i, err)
		}
	}
	got, err := w.Close()
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	if len(got) != 2 || got[0].Lines != 100_000 || got[1].Lines != 1 {
		t.Errorf("parts = %+v, want 100,000 lines then 1", got)
	}
}

type countingParts struct{ n int }

func (p *countingParts) open(int) (io.Writer, io.Writer, error) {
	p.n++
	return io.Discard, io.Discard, nil
}

func TestWriter_SplitsAtByteLimit(t *testing.T) {
	t.Parallel()
	const limit = 1000
	w, p := newWriter(t, batchfile.Limits{MaxBytes: limit})
	for i := range 40 {
		if _, err := w.Add(item("t", fmt.Sprint(i), strings.Repeat("y", i*5))); err != nil {
			t.Fatalf("Add %d: %v", i, err)
		}
	}
	got, err := w.Close()
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	if len(got) < 3 {
		t.Fatalf("got %d parts, want several", len(got))
	}
	total := 0
	for i, part := range got {
		data := p.inputs[i].Bytes()
		if int64(len(data)) != part.Bytes || part.Bytes > limit {
			t.Errorf("part %d: %d bytes written, recorded %d, limit %d", i, len(data), part.Bytes, limit)
		}
		if i+1 < len(got) {
			next, _, _ := bytes.Cut(p.inputs[i+1].Bytes(), []byte("\n"))
			if part.Bytes+int64(len(next))+1 <= limit {
				t.Errorf("part %d closed at %d bytes although the next line (%d bytes) fitted", i, part.Bytes, len(next)+1)
			}
		}
		total += part.Lines
	}
	if total != 40 {
		t.Errorf("lines = %d, want 40", total)
	}
}

func TestWriter_RejectsItemsAndGoesOn(t *testing.T) {
	t.Parallel()
	w, p := newWriter(t, batchfile.Limits{MaxBytes: 400})
	bad := map[string]batchfile.Item{
		"no tenant":        item("", "i", "x"),
		"no messages":      {Tenant: "t", ItemID: "i"},
		"invalid utf8":     item("t", "i", "\xff"),
		"no role":          {Tenant: "t", Messages: []batchfile.Message{{Content: "x"}}},
		"long item id":     item("t", strings.Repeat("i", batchfile.MaxItemIDLen+1), "x"),
		"line over limit":  item("t", "i", strings.Repeat("z", 500)),
		"reserved extra":   {Tenant: "t", Messages: []batchfile.Message{{Role: "user", Content: "x"}}, Extra: map[string]json.RawMessage{"model": json.RawMessage(`"other"`)}},
		"invalid extra":    {Tenant: "t", Messages: []batchfile.Message{{Role: "user", Content: "x"}}, Extra: map[string]json.RawMessage{"seed": json.RawMessage(`{`)}},
		"negative max tok": {Tenant: "t", MaxTokens: -1, Messages: []batchfile.Message{{Role: "user", Content: "x"}}},
	}
	for name, it := range bad {
		if _, err := w.Add(it); !errors.Is(err, batchfile.ErrInvalidItem) {
			t.Errorf("Add(%s) error = %v, want ErrInvalidItem", name, err)
		}
	}
	if len(p.inputs) != 0 {
		t.Errorf("rejected items opened %d parts", len(p.inputs))
	}
	ref, err := w.Add(item("t", "ok", "fine"))
	if err != nil {
		t.Fatalf("Add after rejections: %v", err)
	}
	if ref.Part != 0 || ref.Line != 0 {
		t.Errorf("first accepted item at %d.%d, want 0.0", ref.Part, ref.Line)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriter_WriteErrorIsSticky(t *testing.T) {
	t.Parallel()
	w, err := batchfile.NewWriter(batchfile.WriterConfig{Job: "j", Deployment: "d"}, func(int) (io.Writer, io.Writer, error) {
		return failingWriter{}, failingWriter{}, nil
	})
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	for i := range 3 {
		_, _ = w.Add(item("t", fmt.Sprint(i), "x"))
	}
	if _, err := w.Close(); err == nil || errors.Is(err, batchfile.ErrInvalidItem) {
		t.Errorf("Close error = %v, want the write error", err)
	}
	if _, err := w.Add(item("t", "later", "x")); err == nil {
		t.Error("Add after a write error succeeded")
	}
}

func TestNewWriter_Validates(t *testing.T) {
	t.Parallel()
	open := func(int) (io.Writer, io.Writer, error) { return io.Discard, io.Discard, nil }
	for name, cfg := range map[string]batchfile.WriterConfig{
		"no job":        {Deployment: "d"},
		"bad job":       {Job: "a.b", Deployment: "d"},
		"no deployment": {Job: "j"},
		"quote in dep":  {Job: "j", Deployment: `d"`},
		"too many":      {Job: "j", Deployment: "d", Limits: batchfile.Limits{MaxLines: 2_000_000}},
	} {
		if _, err := batchfile.NewWriter(cfg, open); err == nil {
			t.Errorf("NewWriter(%s) succeeded", name)
		}
	}
	if _, err := batchfile.NewWriter(batchfile.WriterConfig{Job: "j", Deployment: "d"}, nil); err == nil {
		t.Error("NewWriter(nil opener) succeeded")
	}
}

// TestIndex_JoinsHostileItemIDs writes every hostile item id, then joins the
// custom_ids back (in reverse order, as output may come) through the index.
func TestIndex_JoinsHostileItemIDs(t *testing.T) {
	t.Parallel()
	w, p := newWriter(t, batchfile.Limits{MaxLines: 4})
	want := map[string]batchfile.IndexEntry{}
	var ids []string
	tenants := []string{"tenant-a", "tenant-b"}
	for name, id := range hostileItemIDs() {
		for _, tenant := range tenants { // the same item id under two tenants
			ref, err := w.Add(item(tenant, id, name))
			if err != nil {
				t.Fatalf("Add(%s): %v", name, err)
			}
			want[ref.String()] = batchfile.IndexEntry{CustomID: ref.String(), Tenant: tenant, ItemID: id}
			ids = append(ids, ref.String())
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	var opens int
	readers := make([]*batchfile.IndexReader, len(p.indexes))
	for i, buf := range p.indexes {
		readers[i] = batchfile.NewIndexReader("job1", i, opener(buf.Bytes(), &opens))
	}
	seen := map[string]bool{}
	for i := len(ids) - 1; i >= 0; i-- {
		ref, err := batchfile.ParseCustomID(ids[i])
		if err != nil {
			t.Fatal(err)
		}
		line, got, err := readers[ref.Part].Resolve(ids[i])
		if err != nil {
			t.Fatalf("Resolve(%q): %v", ids[i], err)
		}
		if line != ref.Line || got != want[ids[i]] {
			t.Errorf("Resolve(%q) = %+q, want %+q", ids[i], got, want[ids[i]])
		}
		seen[ids[i]] = true
	}
	if len(seen) != len(ids) {
		t.Errorf("%d distinct custom_ids for %d lines", len(seen), len(ids))
	}
	// Every input line's custom_id is one of those.
	for i, buf := range p.inputs {
		sc := bufio.NewScanner(buf)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l struct {
				CustomID string `json:"custom_id"`
			}
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil || !seen[l.CustomID] {
				t.Errorf("part %d line %q: custom_id not indexed (%v)", i, l.CustomID, err)
			}
		}
	}
}

// The index is a header naming the job and the part, then one entry per
// line with the tenant and the item id and nothing else: an entry's
// custom_id is its position and check.
func TestIndex_Format(t *testing.T) {
	t.Parallel()
	w, p := newWriter(t, batchfile.Limits{MaxLines: 2})
	for _, id := range []string{"a", "b\n\"", "", "\xff\xfe"} {
		if _, err := w.Add(item("contoso", id, "x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"job":"job1","part":0}` + "\n" + `{"tenant":"contoso","item_id":"a"}` + "\n" + `{"tenant":"contoso","item_id":"b\n\""}` + "\n",
		`{"job":"job1","part":1}` + "\n" + `{"tenant":"contoso","item_id":""}` + "\n" + `{"tenant":"contoso","item_id_b64":"__4"}` + "\n",
	}
	for i, b := range p.indexes {
		if b.String() != want[i] {
			t.Errorf("index of part %d =\n%s\nwant\n%s", i, b, want[i])
		}
	}
}

// Retarget rewrites every line's body.model and nothing else; a line that
// names another deployment is an error.
func TestRetarget(t *testing.T) {
	t.Parallel()
	w, p := newWriter(t, batchfile.Limits{})
	for i := range 3 {
		if _, err := w.Add(item("t1", fmt.Sprint(i), `"model":"gpt-4o-mini-batch" in a prompt`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	in := p.inputs[0].String()
	out, err := io.ReadAll(batchfile.Retarget(strings.NewReader(in), "gpt-4o-mini-batch", "mini-batch-eu2"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.ReplaceAll(in, `"body":{"model":"gpt-4o-mini-batch"`, `"body":{"model":"mini-batch-eu2"`)
	if string(out) != want || len(out) != len(in)+3*(len("mini-batch-eu2")-len("gpt-4o-mini-batch")) {
		t.Errorf("retargeted =\n%s\nwant\n%s", out, want)
	}
	if _, err := io.ReadAll(batchfile.Retarget(strings.NewReader(in), "other", "x")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("Retarget from the wrong deployment: %v", err)
	}
}
