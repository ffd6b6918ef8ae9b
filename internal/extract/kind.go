package extract

import (
	"fmt"
	"mime"
	"path"
	"strings"

	"github.com/offpath/offpath/internal/outcome"
)

// Kind is a document format.
type Kind int

// The supported kinds.
const (
	Text Kind = iota + 1
	Markdown
	HTML
	JSON
	CSV
	TSV
)

func (k Kind) String() string {
	switch k {
	case Text:
		return "text"
	case Markdown:
		return "markdown"
	case HTML:
		return "html"
	case JSON:
		return "json"
	case CSV:
		return "csv"
	case TSV:
		return "tsv"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// KindOf picks the kind of a document from its name's extension, or, when
// the extension says nothing, its content type. PDF and every other format
// are rejected with ReasonUnsupported.
func KindOf(name, contentType string) (Kind, error) {
	ext := strings.ToLower(path.Ext(name))
	switch ext {
	case ".txt", ".text", ".log":
		return Text, nil
	case ".md", ".markdown":
		return Markdown, nil
	case ".html", ".htm":
		return HTML, nil
	case ".json", ".jsonl", ".ndjson":
		return JSON, nil
	case ".csv":
		return CSV, nil
	case ".tsv":
		return TSV, nil
	case ".pdf":
		return 0, outcome.Reject(ReasonUnsupported, fmt.Errorf("%s: PDF extraction is not supported", ext))
	case "":
	default:
		return 0, outcome.Reject(ReasonUnsupported, fmt.Errorf("extension %q", ext))
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return 0, outcome.Reject(ReasonUnsupported, fmt.Errorf("no extension and content type %q", contentType))
	}
	switch mt {
	case "text/plain":
		return Text, nil
	case "text/markdown", "text/x-markdown":
		return Markdown, nil
	case "text/html", "application/xhtml+xml":
		return HTML, nil
	case "application/json", "application/x-ndjson", "application/jsonl":
		return JSON, nil
	case "text/csv":
		return CSV, nil
	case "text/tab-separated-values":
		return TSV, nil
	}
	return 0, outcome.Reject(ReasonUnsupported, fmt.Errorf("content type %q", mt))
}
