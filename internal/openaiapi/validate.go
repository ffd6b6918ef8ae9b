package openaiapi

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/lines"
	"github.com/offpath/offpath/internal/tenant"
)

// maxLineBytes bounds one input line: the largest item the control plane
// accepts (prompt and messages of 1 MiB each) with room for the envelope.
const maxLineBytes = 4 << 20

// The routes a line may name, with and without Azure's /v1 prefix.
var chatURLs = map[string]bool{"/chat/completions": true, "/v1/chat/completions": true}

// normalURL is a route without the /v1 prefix, how batches compare them.
func normalURL(u string) string { return strings.TrimPrefix(u, "/v1") }

// inputLine is one line of a batch input file.
type inputLine struct {
	CustomID *string         `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// chatBody is the part of a chat completions body the door carries.
type chatBody struct {
	Model               string        `json:"model"`
	Messages            []chatMessage `json:"messages"`
	MaxTokens           int           `json:"max_tokens"`
	MaxCompletionTokens int           `json:"max_completion_tokens"`
	Temperature         *float64      `json:"temperature"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name"`
}

// inputSummary is what validating a file found.
type inputSummary struct {
	Lines int
	Model string
	URL   string
}

// validator checks a batch input file line by line, as Azure validates
// one, and writes each line as a control-plane item.
type validator struct {
	t        tenant.Tenant
	canBatch func(alias string) bool
	maxLines int
	seen     map[[16]byte]struct{}
	sum      inputSummary
	items    *json.Encoder
}

// lineError is a refusal of the file at one line, in Azure's codes.
func lineError(line int, code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, param: "file", line: line,
		message: fmt.Sprintf("line %d: ", line) + fmt.Sprintf(format, args...)}
}

// run reads the file from r to its end, or to the first refused line.
func (v *validator) run(r io.Reader) (inputSummary, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var buf []byte
	var blank int // a blank line is refused only if a line follows it
	for n := 1; ; n++ {
		line, err := lines.Read(br, buf, maxLineBytes)
		buf = line
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, lines.ErrTooLong) {
			return v.sum, lineError(n, "invalid_json_line", "longer than %d bytes", maxLineBytes)
		}
		if err != nil {
			return v.sum, err
		}
		if n == 1 && bytes.HasPrefix(line, []byte("\xef\xbb\xbf")) {
			return v.sum, lineError(n, "invalid_json_line", "the file starts with a byte-order mark; save it as UTF-8 without BOM")
		}
		if len(bytes.TrimSpace(line)) == 0 {
			if blank == 0 {
				blank = n
			}
			continue
		}
		if blank > 0 {
			return v.sum, lineError(blank, "invalid_json_line", "blank line")
		}
		if err := v.line(n, line); err != nil {
			return v.sum, err
		}
	}
	if v.sum.Lines == 0 {
		return v.sum, &apiError{status: http.StatusBadRequest, code: "empty_file", param: "file", message: "the file has no requests"}
	}
	return v.sum, nil
}

func (v *validator) line(n int, raw []byte) error {
	var l inputLine
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil || dec.More() {
		if err != nil && strings.HasPrefix(err.Error(), "json: unknown field") {
			return lineError(n, "invalid_request", "%s; a line has custom_id, method, url and body", strings.TrimPrefix(err.Error(), "json: "))
		}
		return lineError(n, "invalid_json_line", "not a JSON object")
	}
	v.sum.Lines++
	if v.sum.Lines > v.maxLines {
		return lineError(n, "too_many_tasks", "more than %d requests in one file", v.maxLines)
	}
	switch {
	case l.CustomID == nil || *l.CustomID == "":
		return lineError(n, "invalid_request", "custom_id is required")
	case l.Method != http.MethodPost:
		return lineError(n, "invalid_request", "method must be POST")
	case !chatURLs[l.URL]:
		return lineError(n, "invalid_request", "url %q: offpath's batch door runs /v1/chat/completions (or /chat/completions)", clip(l.URL))
	case v.sum.URL != "" && l.URL != v.sum.URL:
		return lineError(n, "url_mismatch", "url %q differs from the first line's %q", clip(l.URL), v.sum.URL)
	case len(l.Body) == 0 || l.Body[0] != '{':
		return lineError(n, "invalid_request", "body must be a chat completions request object")
	}
	v.sum.URL = l.URL
	var b chatBody
	bd := json.NewDecoder(bytes.NewReader(l.Body))
	bd.DisallowUnknownFields()
	if err := bd.Decode(&b); err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if strings.HasPrefix(msg, "unknown field") {
			return lineError(n, "invalid_request", "body: %s; the door carries model, messages, max_tokens, max_completion_tokens and temperature", clip(msg))
		}
		return lineError(n, "invalid_request", "body: %s", clip(msg))
	}
	switch {
	case b.Model == "":
		return lineError(n, "invalid_request", "body.model is required: one of the tenant's model aliases")
	case !v.t.Allows(b.Model) || !v.canBatch(b.Model):
		return lineError(n, "model_not_found", "body.model %q is not a model alias this tenant may use for batches", clip(b.Model))
	case v.sum.Model != "" && b.Model != v.sum.Model:
		return lineError(n, "model_mismatch", "body.model %q differs from the first line's %q; one file, one model", clip(b.Model), v.sum.Model)
	}
	v.sum.Model = b.Model
	id := *l.CustomID
	k := customIDKey(id)
	if _, dup := v.seen[k]; dup {
		return lineError(n, "duplicate_custom_id", "custom_id %q appears more than once", clip(id))
	}
	v.seen[k] = struct{}{}
	it := batch.Item{ID: id, MaxTokens: b.MaxTokens, MaxCompletionTokens: b.MaxCompletionTokens, Temperature: b.Temperature}
	for i, m := range b.Messages {
		var text string
		if err := json.Unmarshal(m.Content, &text); err != nil {
			return lineError(n, "invalid_request", "body.messages[%d].content: the door carries text content (a string)", i)
		}
		if m.Name != "" {
			return lineError(n, "invalid_request", "body.messages[%d].name is not supported by the door", i)
		}
		it.Messages = append(it.Messages, batchfile.Message{Role: m.Role, Content: text})
	}
	if err := it.Check(n); err != nil {
		var inv *batch.InvalidError
		if errors.As(err, &inv) {
			return lineError(n, "invalid_request", "%s", inv.Message)
		}
		return err
	}
	if err := v.items.Encode(&it); err != nil {
		return fmt.Errorf("write item: %w", err)
	}
	return nil
}

func customIDKey(id string) [16]byte {
	sum := sha256.Sum256([]byte(id))
	var k [16]byte
	copy(k[:], sum[:16])
	return k
}
