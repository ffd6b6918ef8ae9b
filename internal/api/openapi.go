package api

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"sigs.k8s.io/yaml"
)

// openAPIYAML is the API's contract, kept as YAML for people to read.
//
//go:embed openapi.yaml
var openAPIYAML []byte

// OpenAPI returns the contract of the REST API and the OpenAI-compatible
// door as JSON: an OpenAPI 3.0 document, served at /api/v1/openapi.json.
func OpenAPI() ([]byte, error) {
	b, err := yaml.YAMLToJSON(openAPIYAML)
	if err != nil {
		return nil, fmt.Errorf("the embedded OpenAPI document: %w", err)
	}
	return b, nil
}

// openAPIDoc is the document as served, with its ETag.
type openAPIDoc struct {
	body []byte
	etag string
	err  error
}

func newOpenAPIDoc() openAPIDoc {
	b, err := OpenAPI()
	sum := sha256.Sum256(b)
	return openAPIDoc{body: b, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, err: err}
}

// openAPI serves the document without a credential: it is the same for
// everyone and changes only with the binary, so caches may keep it for an
// hour and revalidate it by its ETag.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	doc := s.doc()
	if doc.err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the OpenAPI document is unavailable")
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "public, max-age=3600")
	h.Set("ETag", doc.etag)
	h.Set("X-Content-Type-Options", "nosniff")
	for _, tag := range strings.Split(r.Header.Get("If-None-Match"), ",") {
		if t := strings.TrimSpace(tag); t == doc.etag || t == "*" {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(doc.body)
}
