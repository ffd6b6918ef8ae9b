package tickets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// recorder is a sink that keeps what it was given.
type recorder struct {
	ids   []string
	lines []int
	skips []Skip
	stop  error
}

func (r *recorder) ticket(_ context.Context, t Ticket) error {
	r.ids = append(r.ids, t.ID)
	r.lines = append(r.lines, t.Line)
	return r.stop
}

func (r *recorder) skip(line int, id, reason string) {
	r.skips = append(r.skips, Skip{Line: line, ID: id, Reason: reason})
}

func TestDecode(t *testing.T) {
	t.Parallel()
	var manyBad strings.Builder
	manyBad.WriteString(`{"id":"ok-1","body":"b"}` + "\n")
	for range 150 {
		manyBad.WriteString("not json\n")
	}
	manyBad.WriteString(`{"id":"never-read","body":"b"}` + "\n")

	tests := []struct {
		name      string
		format    format
		in        string
		wantIDs   string // comma-separated
		wantLines string
		wantSkips string // "line:reason-prefix;..."
	}{
		{"one ticket", oneJSON, `{"id":"a","body":"b"}`, "a", "0", ""},
		{"pretty-printed ticket", oneJSON, "{\n  \"id\": \"a\",\n  \"body\": \"b\"\n}\n", "a", "0", ""},
		{"empty file", oneJSON, " \n", "", "", "0:empty file"},
		{"file over the document limit", oneJSON, `{"id":"a","body":"b"}` + strings.Repeat(" ", MaxDocumentBytes), "", "", "0:file too large for one ticket"},
		{"two tickets in a .json", oneJSON, `{"id":"a","body":"b"}` + "\n" + `{"id":"c","body":"d"}`, "", "", "0:malformed JSON"},
		{"lines", jsonLines, "{\"id\":\"a\",\"body\":\"b\"}\n\n  \n{\"id\":\"c\",\"body\":\"d\"}\r\n{\"id\":\"e\",\"body\":\"f\"}", "a,c,e", "1,4,5", ""},
		{"bom on the first line", jsonLines, "\uFEFF{\"id\":\"a\",\"body\":\"b\"}\n", "a", "1", ""},
		{"bad lines among good ones", jsonLines, "{\"id\":\"a\",\"body\":\"b\"}\n{oops\n{\"body\":\"b\"}\n{\"id\":\"c\",\"body\":\"d\"}\n", "a,c", "1,4", "2:malformed JSON;3:missing id"},
		{"empty .jsonl", jsonLines, "", "", "", ""},
		{"too many bad lines", jsonLines, manyBad.String(), "ok-1", "1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r recorder
			if err := decode(t.Context(), strings.NewReader(tt.in), tt.format, &r); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got := strings.Join(r.ids, ","); got != tt.wantIDs {
				t.Errorf("ids = %q, want %q", got, tt.wantIDs)
			}
			if got := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(r.lines)), ","), "[]"); got != tt.wantLines {
				t.Errorf("lines = %q, want %q", got, tt.wantLines)
			}
			if tt.name == "too many bad lines" {
				if len(r.skips) != maxBadLines+1 || !strings.Contains(r.skips[maxBadLines].Reason, "rest of the file skipped") {
					t.Errorf("skips = %d, last %+v; want %d malformed lines and one for the rest", len(r.skips), r.skips[len(r.skips)-1], maxBadLines)
				}
				return
			}
			var got []string
			for _, s := range r.skips {
				got = append(got, fmt.Sprintf("%d:%s", s.Line, s.Reason))
			}
			want := strings.Split(tt.wantSkips, ";")
			if tt.wantSkips == "" {
				want = nil
			}
			if len(got) != len(want) {
				t.Fatalf("skips = %q, want %q", got, want)
			}
			for i := range want {
				if !strings.HasPrefix(got[i], want[i]) {
					t.Errorf("skip %d = %q, want prefix %q", i, got[i], want[i])
				}
			}
		})
	}
}

func TestDecode_LongLineIsSkippedNotHeld(t *testing.T) {
	t.Parallel()
	long := `{"id":"big","body":"` + strings.Repeat("x", MaxDocumentBytes) + `"}`
	in := `{"id":"a","body":"b"}` + "\n" + long + "\n" + `{"id":"c","body":"d"}`
	var r recorder
	if err := decode(t.Context(), strings.NewReader(in), jsonLines, &r); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if got := strings.Join(r.ids, ","); got != "a,c" {
		t.Errorf("ids = %q, want a,c", got)
	}
	if len(r.skips) != 1 || r.skips[0].Line != 2 || !strings.HasPrefix(r.skips[0].Reason, "line too long") {
		t.Errorf("skips = %+v, want line 2 too long", r.skips)
	}
}

func TestDecode_SinkErrorStops(t *testing.T) {
	t.Parallel()
	stop := errors.New("writer full")
	r := recorder{stop: stop}
	err := decode(t.Context(), strings.NewReader("{\"id\":\"a\",\"body\":\"b\"}\n{\"id\":\"c\",\"body\":\"d\"}\n"), jsonLines, &r)
	if !errors.Is(err, stop) || len(r.ids) != 1 {
		t.Errorf("decode = %v after %d tickets, want %v after 1", err, len(r.ids), stop)
	}
}

func TestFormatOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		want format
	}{
		{"2026-03-14/T-1.json", oneJSON},
		{"2026-03-14/T-1.JSON", oneJSON},
		{"2026-03-14/export.jsonl", jsonLines},
		{"2026-03-14/export.ndjson", jsonLines},
		{"2026-03-14/export.csv", unsupported},
		{"2026-03-14/json", unsupported},
		{"2026-03-14/export.jsonl.tmp", unsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := formatOf(tt.name); got != tt.want {
				t.Errorf("formatOf(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}
