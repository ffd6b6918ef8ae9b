package ingest

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/offpath/offpath/internal/chunk"
	"github.com/offpath/offpath/internal/jsonstr"
)

// ResultContentType is the result blob's Content-Type: JSON Lines.
const ResultContentType = "application/x-ndjson"

// The result, ingested/{tenant}/{path}.jsonl, is JSON Lines for the search
// indexer: first a "document" line (the document's metadata, summary and
// keywords, or why there is no summary), then one "chunk" line per chunk
// with its text, vector and position and the document's metadata again,
// so that every line can be indexed on its own.

// docMeta is what every line says about the document.
type docMeta struct {
	ID            string `json:"document_id"`
	Tenant        string `json:"tenant"`
	Path          string `json:"path"`
	URL           string `json:"url"`
	ETag          string `json:"etag"`
	ContentType   string `json:"content_type,omitempty"`
	CorrelationID string `json:"correlation_id"`
	// prefix is the encoded fields above, shared by every chunk line.
	prefix []byte
}

func (m *docMeta) encode() {
	b, _ := json.Marshal(m)
	m.prefix = b[1 : len(b)-1] // the fields without the braces
}

// documentLine is the head of a result.
type documentLine struct {
	Kind string `json:"kind"`
	docMeta
	Size             int64     `json:"size"`
	Chunks           int       `json:"chunks"`
	Summary          string    `json:"summary,omitempty"`
	Keywords         []string  `json:"keywords,omitempty"`
	SummaryTruncated bool      `json:"summary_truncated,omitempty"`
	SummaryRefused   *refusal  `json:"summary_refused,omitempty"`
	EmbeddingModel   string    `json:"embedding_model,omitempty"`
	ChatModel        string    `json:"chat_model,omitempty"`
	Processed        time.Time `json:"processed"`
}

type refusal struct {
	Stage      string   `json:"stage"`
	Categories []string `json:"categories,omitempty"`
}

func (d documentLine) encode() []byte {
	b, _ := json.Marshal(d)
	return append(b, '\n')
}

// appendChunkLine appends one chunk's line to dst.
func appendChunkLine(dst []byte, m *docMeta, c chunk.Chunk, vector []float32) ([]byte, error) {
	dst = append(dst, `{"kind":"chunk","id":"`...)
	dst = append(dst, m.ID...)
	dst = append(dst, '-')
	dst = strconv.AppendInt(dst, int64(c.Index), 10)
	dst = append(dst, `",`...)
	dst = append(dst, m.prefix...)
	dst = append(dst, `,"chunk":`...)
	dst = strconv.AppendInt(dst, int64(c.Index), 10)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendInt(dst, c.Offset, 10)
	dst = append(dst, `,"tokens":`...)
	dst = strconv.AppendInt(dst, int64(c.Tokens), 10)
	dst = append(dst, `,"overlap":`...)
	dst = strconv.AppendInt(dst, int64(c.Overlap), 10)
	dst = append(dst, `,"text":`...)
	dst = jsonstr.Append(dst, c.Text)
	dst = append(dst, `,"vector":[`...)
	for i, v := range vector {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return dst, errors.New("the embedding has a value that is not a number")
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendFloat(dst, float64(v), 'g', -1, 32)
	}
	return append(dst, "]}\n"...), nil
}
