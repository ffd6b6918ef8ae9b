package aoaisim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"

	"github.com/offpath/offpath/internal/lines"
)

// utf8BOM is the byte-order mark Azure's batch validation trips over.
const utf8BOM = "\xef\xbb\xbf"

// maxValidationErrors bounds errors.data of a failed job.
const maxValidationErrors = 100

// maxLineBytes bounds one input line (the file limit bounds it anyway).
const maxLineBytes = 256 << 20

// inputLine is one request of a batch input file, as validation reads it.
type inputLine struct {
	CustomID *string `json:"custom_id"`
	Method   string  `json:"method"`
	URL      string  `json:"url"`
	Body     *struct {
		Model string `json:"model"`
	} `json:"body"`
}

// validation is the outcome of the validation pass.
type validation struct {
	lines      int
	deployment string
	errs       []batchError
}

func (v *validation) fail(code, message string, line int, param string) {
	if len(v.errs) >= maxValidationErrors {
		return
	}
	e := batchError{Code: code, Message: message}
	if line > 0 {
		e.Line = &line
	}
	if param != "" {
		e.Param = strPtr(param)
	}
	v.errs = append(v.errs, e)
}

// validateInput streams the input file once and applies Azure's checks:
// empty_file, too_many_tasks, BOM, invalid_json_line, duplicate_custom_id,
// url_mismatch, model_not_found, model_mismatch and invalid_request. Only a
// 128-bit hash per custom_id is kept, so memory grows by 16 bytes per line.
func (s *Server) validateInput(f *os.File, rec *fileRecord, endpoint string) (validation, error) {
	var v validation
	switch {
	case rec.Bytes == 0:
		v.fail("empty_file", "The input file is empty. Please ensure that the batch contains at least one request.", 0, "")
		return v, nil
	case rec.Lines > s.cfg.Batch.MaxLines:
		v.fail("too_many_tasks", fmt.Sprintf("The number of tasks in the input file (%d) exceeds the limit of %d.", rec.Lines, s.cfg.Batch.MaxLines), 0, "")
		return v, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return v, fmt.Errorf("rewind input: %w", err)
	}
	r := bufio.NewReaderSize(f, 256<<10)
	if head, _ := r.Peek(len(utf8BOM)); string(head) == utf8BOM {
		v.fail("model_not_found", "A valid model deployment name couldn't be extracted from the input file. Please ensure that each row in the input file has a valid deployment name specified in the 'model' field, and that the deployment name is the same across all rows.", 0, "")
		return v, nil
	}
	seen := make(map[[16]byte]struct{}, min(rec.Lines, s.cfg.Batch.MaxLines))
	var line []byte
	var firstURL string
	for {
		var err error
		line, err = lines.Read(r, line, maxLineBytes)
		if errors.Is(err, io.EOF) {
			break
		}
		v.lines++
		if err != nil && !errors.Is(err, lines.ErrTooLong) {
			return v, err
		}
		var in inputLine
		if err != nil || len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &in) != nil {
			v.fail("invalid_json_line", fmt.Sprintf("Line %d is not a valid JSON object.", v.lines), v.lines, "")
			continue
		}
		s.checkLine(&v, &in, seen, &firstURL, endpoint)
		if len(v.errs) >= maxValidationErrors {
			break
		}
	}
	if v.lines == 0 {
		v.fail("empty_file", "The input file is empty. Please ensure that the batch contains at least one request.", 0, "")
	}
	return v, nil
}

// checkLine applies the per-line checks to a parsed line.
func (s *Server) checkLine(v *validation, in *inputLine, seen map[[16]byte]struct{}, firstURL *string, endpoint string) {
	n := v.lines
	if in.CustomID == nil || *in.CustomID == "" {
		v.fail("invalid_request", fmt.Sprintf("Line %d has no custom_id.", n), n, "custom_id")
	} else {
		h := fnv.New128a()
		_, _ = h.Write([]byte(*in.CustomID))
		var key [16]byte
		h.Sum(key[:0])
		if _, dup := seen[key]; dup {
			v.fail("duplicate_custom_id", fmt.Sprintf("The custom_id '%s' on line %d is not unique in the input file.", *in.CustomID, n), n, "custom_id")
		}
		seen[key] = struct{}{}
	}
	if in.Method != "POST" {
		v.fail("invalid_request", fmt.Sprintf("Line %d: method must be 'POST'.", n), n, "method")
	}
	switch {
	case *firstURL == "":
		*firstURL = in.URL
		if normaliseRoute(in.URL) != normaliseRoute(endpoint) {
			v.fail("url_mismatch", fmt.Sprintf("The url '%s' on line %d does not match the batch endpoint '%s'.", in.URL, n, endpoint), n, "url")
		}
	case s.cfg.Batch.URLMatch == URLMatchExact && in.URL != *firstURL,
		normaliseRoute(in.URL) != normaliseRoute(*firstURL):
		v.fail("url_mismatch", fmt.Sprintf("The url '%s' on line %d does not match the url of the first line ('%s'); all lines must use the same url.", in.URL, n, *firstURL), n, "url")
	}
	if in.Body == nil || in.Body.Model == "" {
		v.fail("invalid_request", fmt.Sprintf("Line %d has no body.model.", n), n, "body.model")
		return
	}
	body := in.Body
	if v.deployment == "" {
		v.deployment = body.Model
		dep := s.deps[body.Model]
		switch {
		case dep == nil:
			v.fail("model_not_found", fmt.Sprintf("The model deployment '%s' on line %d was not found.", body.Model, n), n, "body.model")
		case dep.cfg.Type != TypeGlobalBatch:
			v.fail("invalid_request", fmt.Sprintf("The deployment '%s' is not a global batch deployment.", body.Model), n, "body.model")
		}
		return
	}
	if body.Model != v.deployment {
		v.fail("model_mismatch", fmt.Sprintf("The model '%s' on line %d differs from '%s' on the first line; all lines must use the same deployment.", body.Model, n, v.deployment), n, "body.model")
	}
}
