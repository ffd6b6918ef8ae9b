package extract_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/chunk"
	"github.com/offpath/offpath/internal/extract"
	"github.com/offpath/offpath/internal/testing/rss"
)

// docBytes is the size of the generated documents of the pipeline checks.
const docBytes = 50 << 20

// generator streams a synthetic document of about n bytes of one kind
// without ever holding it, as a blob download does: a header, then a block
// of 2,000 varied records repeated, ending after the block that reaches n,
// so every format stays well formed. The block is rendered once, so the
// benchmark measures extraction, not the generator.
type generator struct {
	n, off int64
	head   []byte
	block  []byte
	pos    int // in head, then in block
	inHead bool
}

func newGenerator(kind extract.Kind, n int64) *generator {
	var head, block bytes.Buffer
	for rec := 1; rec <= 2000; rec++ {
		sentence := fmt.Sprintf("Record %d tells of queues, tokens and tenants; it is written plainly for the test. ", rec)
		switch kind {
		case extract.Markdown:
			fmt.Fprintf(&block, "## Section %d\n\nSome *emphasis*, a [link](https://example.com/%d) and `code`. %s%s\n\n- item one\n- item two\n\n", rec, rec, sentence, sentence)
		case extract.HTML:
			fmt.Fprintf(&block, "<div class=\"r\"><h2>Section %d</h2><p>%s<b>%s</b></p><script>var x=%d;</script><ul><li>a &amp; b</li></ul></div>\n", rec, sentence, sentence, rec)
		case extract.JSON:
			fmt.Fprintf(&block, "{\"id\":%d,\"title\":\"Section %d\",\"body\":%q,\"meta\":{\"author\":\"Ada\",\"tags\":[\"a\",\"b\"]}}\n", rec, rec, sentence+sentence)
		case extract.CSV:
			fmt.Fprintf(&block, "%d,Section %d,\"%s\",Ada\n", rec, rec, sentence)
		default:
			fmt.Fprintf(&block, "%s%s%s\n\n", sentence, sentence, sentence)
		}
	}
	if kind == extract.CSV {
		head.WriteString("id,title,body,author\n")
	}
	return &generator{n: n, head: head.Bytes(), block: block.Bytes(), inHead: true}
}

func (g *generator) Read(p []byte) (int, error) {
	src := g.block
	if g.inHead {
		src = g.head
	}
	if g.pos == len(src) {
		switch {
		case g.inHead:
			g.inHead, g.pos = false, 0
			return g.Read(p)
		case g.off >= g.n:
			return 0, io.EOF
		}
		g.pos = 0
	}
	k := copy(p, src[g.pos:])
	g.pos += k
	g.off += int64(k)
	return k, nil
}

// pipeline extracts and chunks a generated document, returning the text
// bytes and the number of chunks.
func pipeline(tb testing.TB, kind extract.Kind, n int64) (text int64, chunks int) {
	tb.Helper()
	x, err := extract.New(kind, newGenerator(kind, n), extract.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	s, err := chunk.New(x, chunk.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	for c, err := range s.All() {
		if err != nil {
			tb.Fatalf("%v: %v", kind, err)
		}
		text += int64(len(c.Text) - c.Overlap)
		chunks++
	}
	return text, chunks
}

func kinds() []extract.Kind {
	return []extract.Kind{extract.Text, extract.Markdown, extract.HTML, extract.JSON, extract.CSV}
}

// BenchmarkPipeline measures extraction and chunking of a 50 MB document
// of each kind: MB/s of input, and the process's peak RSS (VmHWM, reset
// before each run), which includes the test binary itself.
func BenchmarkPipeline(b *testing.B) {
	for _, kind := range kinds() {
		b.Run(kind.String(), func(b *testing.B) {
			b.SetBytes(docBytes)
			rss.Reset(b, rss.Self)
			var chunks int
			for b.Loop() {
				_, chunks = pipeline(b, kind, docBytes)
			}
			b.ReportMetric(float64(rss.Peak(b, rss.Self))/(1<<20), "peak-RSS-MB")
			b.ReportMetric(float64(chunks), "chunks")
		})
	}
}

// TestPipeline_PeakRSS runs the pipeline on a 50 MB document of each kind
// in a child process (so no other test's memory counts) and requires its
// peak RSS to stay under 150 MB.
func TestPipeline_PeakRSS(t *testing.T) {
	t.Parallel()
	if os.Getenv("OFFPATH_PIPELINE_CHILD") != "" {
		t.Skip("the child runs only TestPipeline_Child")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("peak RSS is read from /proc (Linux)")
	}
	if raceEnabled {
		t.Skip("the race detector multiplies both memory and time; make bench reports the real figures")
	}
	for _, kind := range []extract.Kind{extract.Text, extract.HTML} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPipeline_Child$", "-test.v")
		cmd.Env = append(os.Environ(), "OFFPATH_PIPELINE_CHILD="+strconv.Itoa(int(kind)))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child %v: %v\n%s", kind, err, out)
		}
		var rss, text int64
		for line := range strings.Lines(string(out)) {
			if _, err := fmt.Sscanf(strings.TrimSpace(line), "pipeline: peak RSS %d text %d", &rss, &text); err == nil {
				break
			}
		}
		if rss == 0 {
			t.Fatalf("child %v reported no peak RSS:\n%s", kind, out)
		}
		t.Logf("%v: 50 MB document, %d bytes of text, peak RSS %d MB", kind, text, rss>>20)
		if rss >= 150<<20 {
			t.Errorf("%v: peak RSS %d MB, want under 150 MB", kind, rss>>20)
		}
	}
}

// TestPipeline_Child is the child of TestPipeline_PeakRSS.
func TestPipeline_Child(t *testing.T) {
	k, err := strconv.Atoi(os.Getenv("OFFPATH_PIPELINE_CHILD"))
	if err != nil {
		t.Skip("run by TestPipeline_PeakRSS")
	}
	text, _ := pipeline(t, extract.Kind(k), docBytes)
	fmt.Printf("pipeline: peak RSS %d text %d\n", rss.Peak(t, rss.Self), text)
}
