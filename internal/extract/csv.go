package extract

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/offpath/offpath/internal/outcome"
)

// csvProducer writes each row of a CSV (or TSV) file as a paragraph of
// "header: value" pairs separated by "; ", so that every chunk of a table
// keeps the meaning of its columns. The first row is the header; empty
// values are left out.
type csvProducer struct {
	r      *csv.Reader
	header []string
	rows   int
}

func newCSVProducer(src *source, comma rune) *csvProducer {
	r := csv.NewReader(bufio.NewReaderSize(src, readBufferBytes))
	r.Comma = comma
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.ReuseRecord = true
	return &csvProducer{r: r}
}

func (c *csvProducer) next(out *sink) error {
	rec, err := c.r.Read()
	if err != nil {
		var perr *csv.ParseError
		if errors.As(err, &perr) {
			return outcome.Reject(ReasonMalformed, fmt.Errorf("CSV line %d: %w", perr.Line, perr.Err))
		}
		if errors.Is(err, io.EOF) && c.rows == 1 { // a header alone is the only text
			out.writeString(strings.Join(c.header, "; "))
		}
		return err
	}
	c.rows++
	if c.header == nil {
		c.header = make([]string, len(rec))
		for i, h := range rec {
			c.header[i] = strings.TrimSpace(h)
		}
		return nil
	}
	first := true
	for i, v := range rec {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if !first {
			out.writeString("; ")
		}
		first = false
		if i < len(c.header) && c.header[i] != "" {
			out.writeString(c.header[i])
			out.writeString(": ")
		}
		out.writeString(v)
	}
	out.paragraph()
	return nil
}
