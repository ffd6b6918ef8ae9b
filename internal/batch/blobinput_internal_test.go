package batch

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// handLines are input lines of the common shape, which the hand reader
// takes; generalLines are what it leaves to the general decoder.
var handLines = []string{
	`{"id":"a","prompt":"p","max_tokens":5}`,
	`{"id":"a","messages":[{"role":"user","content":"c"}],"temperature":0.5,"max_completion_tokens":9}`,
	` { "id" : "a" , "messages" : [ { "content" : "c" , "role" : "system" } , {"role":"user"} ] } ` + "\r\n",
	`{"id":"é漢字🙂","prompt":"tab\tless \"quoted\" \\ \/ \b\f\n\r\t \u00e9 \ud83d\ude00 \u0000 \u2028","temperature":-0}`,
	`{"id":"a","prompt":"raw U+2028 ` + "\u2028" + ` and U+FFFD ` + "\ufffd" + `","temperature":1.5e-1,"max_tokens":0}`,
	`{"id":"a","messages":[],"temperature":2E+0}`,
	`{}`,
}

var generalLines = []string{
	`{"ID":"a","Prompt":"p"}`,
	`{"i_d":"a"}`,
	`{"id":"a","id":"b"}`,
	`{"id":"a","extra":1}`,
	`{"id":"a"} {"id":"b"}`,
	`{"id":"a"}x`,
	`{}}`,
	`{"id":"a","max_tokens":1.5}`,
	`{"id":"a","max_tokens":1e2}`,
	`{"id":"a","max_tokens":-1}`,
	`{"id":"a","max_tokens":007}`,
	`{"id":"a","max_tokens":123456789012345678901}`,
	`{"id":"a","max_tokens":"5"}`,
	`{"id":"a","temperature":1e400}`,
	`{"id":"a","temperature":.5}`,
	`{"id":"a","temperature":01}`,
	`{"id":"a","temperature":null}`,
	`{"id":null,"prompt":null,"messages":null}`,
	`null`,
	`[]`,
	``,
	`{"id":"a",}`,
	`{"id":"a"`,
	`{"id":"a`,
	"{\"id\":\"\xff\"}",
	"{\"id\":\"a\x01\"}",
	"\xef\xbb\xbf{\"id\":\"a\"}",
	`{"id":"\ud800"}`,
	`{"id":"\udc00\ud800"}`,
	`{"id":"\ud83d\u0041"}`,
	`{"id":"\x41"}`,
	`{"id":"\u00g1"}`,
	`{"\u0069d":"a"}`,
	`{"id":"a","messages":[{"role":"user","content":"c","name":"x"}]}`,
	`{"id":"a","messages":[{"role":"user","role":"system"}]}`,
	`{"id":"a","messages":[null]}`,
	`{"id":"a","messages":[{"Role":"user"}]}`,
	`{"id":"a","messages":{"role":"user"}}`,
	`{"id":"a","messages":[{"role":"user"},]}`,
}

var itemLines = append(append([]string{}, handLines...), generalLines...)

// encodingJSON decodes line as encoding/json's Decoder with
// DisallowUnknownFields did (the line's rest only whitespace): the
// behaviour tenants' lines have always had.
func encodingJSON(line []byte) (Item, error) {
	var want Item
	r := bytes.NewReader(line)
	dec := stdjson.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&want); err != nil {
		return want, err
	}
	rest, _ := io.ReadAll(io.MultiReader(dec.Buffered(), r))
	if len(bytes.Trim(rest, " \t\r\n")) > 0 {
		return want, errors.New("more after the item")
	}
	return want, nil
}

// TestItemLine_DecodeAsEncodingJSON: an input line is an item, or
// refused, exactly as encoding/json's Decoder with DisallowUnknownFields
// had it, whichever way it is read.
func TestItemLine_DecodeAsEncodingJSON(t *testing.T) {
	for _, line := range itemLines {
		checkItemLine(t, []byte(line))
	}
}

// FuzzItemLine: for any line, the same.
func FuzzItemLine(f *testing.F) {
	for _, line := range itemLines {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkItemLine(t, line) })
}

func checkItemLine(t *testing.T, line []byte) {
	t.Helper()
	want, wantErr := encodingJSON(line)
	var d itemLine
	var got Item
	gotErr := d.decode(line, &got)
	if (gotErr == nil) != (wantErr == nil) || (gotErr == nil && !reflect.DeepEqual(got, want)) {
		t.Errorf("%q: %+v, %v; encoding/json: %+v, %v", line, got, gotErr, want, wantErr)
	}
}

// TestItemLine_CommonShapeByHand: the lines of the common shape are read
// by hand, not handed to the general decoder, and what is not a sure item
// of that shape is.
func TestItemLine_CommonShapeByHand(t *testing.T) {
	for want, lines := range map[bool][]string{true: handLines, false: generalLines} {
		for _, line := range lines {
			var d itemLine
			var it Item
			if got := d.item([]byte(line), &it); got != want {
				t.Errorf("%q: read by hand %v, want %v", line, got, want)
			}
		}
	}
}

// BenchmarkItemLine decodes the lines of BenchmarkSubmit's corpus by hand
// and the general way.
func BenchmarkItemLine(b *testing.B) {
	line := []byte(`{"id":"doc-12345","prompt":"` + strings.Repeat("The printer on floor three is on fire again. ", 30) + ` 12345"}`)
	for _, c := range []struct {
		name   string
		decode func(d *itemLine, it *Item) error
	}{
		{"hand", func(d *itemLine, it *Item) error { return d.decode(line, it) }},
		{"general", func(_ *itemLine, it *Item) error { return json.Unmarshal(line, it, itemOptions) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			var d itemLine
			for b.Loop() {
				var it Item
				if err := c.decode(&d, &it); err != nil || it.ID != "doc-12345" {
					b.Fatal(it.ID, err)
				}
			}
		})
	}
}

func TestPartBlockSize(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct{ in, want int64 }{
		{0, mib},                        // inline items
		{14_000_000, mib},               // 10,000 lines of 1.4 KB
		{32 * mib, mib},                 // a thirty-second is 1 MiB
		{32*mib + 1, 2 * mib},           // rounded up
		{100 * mib, 4 * mib},            // 3.125 MiB, rounded up
		{139_000_000, maxPartBlockSize}, // 100,000 lines
		{1 << 40, maxPartBlockSize},
	} {
		if got := partBlockSize(tt.in); got != tt.want {
			t.Errorf("partBlockSize(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
