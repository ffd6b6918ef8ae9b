package report_test

import (
	"fmt"
	"io"
	"testing"
)

// BenchmarkRender renders a night of 2,000 and of 50,000 tickets to a
// writer that keeps nothing; the bytes/s are of the page written.
func BenchmarkRender(b *testing.B) {
	r := newRenderer(b)
	for _, n := range []int{2_000, 50_000} {
		rep := sample(n)
		for _, format := range []string{"html", "markdown"} {
			render := r.HTML
			if format == "markdown" {
				render = r.Markdown
			}
			b.Run(fmt.Sprintf("%s/%d", format, n), func(b *testing.B) {
				var w counter
				b.ReportAllocs()
				for b.Loop() {
					w = 0
					if err := render(&w, rep); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(int64(w))
			})
		}
	}
}

// counter counts what is written to it.
type counter int64

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}

var _ io.Writer = (*counter)(nil)
