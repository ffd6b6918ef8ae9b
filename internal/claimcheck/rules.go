package claimcheck

import (
	"cmp"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/offpath/offpath/internal/outcome"
)

// Defaults of Policy.
const (
	DefaultContainer      = "incoming"
	DefaultLightQueue     = "doc-ingest"
	DefaultHeavyQueue     = "doc-ingest-heavy"
	DefaultHeavyThreshold = 8 << 20   // 8 MiB
	DefaultMaxDocument    = 100 << 20 // 100 MiB
)

// Field limits.
const (
	maxAccountURL  = 256
	maxETag        = 128
	maxContentType = 128
	maxModelAlias  = 64
)

// MaxCorrelationID is the longest correlation id, in characters.
const MaxCorrelationID = 128

// DefaultExtensions are the document types the queue path extracts text
// from (package extract). PDF is not among them: see extract's package
// documentation.
func DefaultExtensions() []string {
	return []string{".txt", ".text", ".md", ".markdown", ".html", ".htm", ".json", ".jsonl", ".ndjson", ".csv", ".tsv"}
}

// Policy configures Rules. Zero fields take the documented defaults.
type Policy struct {
	// AccountURL is the blob endpoint of the storage account documents are
	// dropped into: "https://{account}.blob.core.windows.net", or Azurite's
	// path-style "http://127.0.0.1:10000/devstoreaccount1". Required. Plain
	// http is accepted only for loopback hosts.
	AccountURL string
	// Container is the container documents are dropped into. Default
	// "incoming".
	Container string
	// Extensions are the accepted extensions, with the dot; compared
	// case-insensitively. Default DefaultExtensions().
	Extensions []string
	// MaxDocumentBytes bounds a message's Size. Default 100 MiB.
	MaxDocumentBytes int64
	// HeavyThreshold is the size from which a document goes to HeavyQueue.
	// Default 8 MiB.
	HeavyThreshold int64
	// LightQueue and HeavyQueue are the Service Bus queues. Default
	// "doc-ingest" and "doc-ingest-heavy".
	LightQueue string
	HeavyQueue string
}

// Rules validates, encodes, decodes and routes claim checks under a Policy.
// It is immutable and safe for concurrent use.
type Rules struct {
	policy     Policy
	prefix     string // lowercase scheme://host[:port] + account path + "/" + container + "/"
	schemeHost string // lowercase scheme://host[:port]
	pathPrefix string // account path + "/" + container + "/", case kept
	extensions map[string]bool
}

// NewRules applies the defaults to p, checks it and returns its Rules.
func NewRules(p Policy) (*Rules, error) {
	p.Container = cmp.Or(p.Container, DefaultContainer)
	if p.Extensions == nil {
		p.Extensions = DefaultExtensions()
	}
	p.MaxDocumentBytes = cmp.Or(p.MaxDocumentBytes, DefaultMaxDocument)
	p.HeavyThreshold = cmp.Or(p.HeavyThreshold, DefaultHeavyThreshold)
	p.LightQueue = cmp.Or(p.LightQueue, DefaultLightQueue)
	p.HeavyQueue = cmp.Or(p.HeavyQueue, DefaultHeavyQueue)

	var errs []error
	u, err := url.Parse(p.AccountURL)
	switch {
	case p.AccountURL == "":
		errs = append(errs, errors.New("account URL: required"))
	case err != nil:
		errs = append(errs, fmt.Errorf("account URL: %w", err))
	case len(p.AccountURL) > maxAccountURL:
		errs = append(errs, fmt.Errorf("account URL: longer than %d bytes", maxAccountURL))
	case u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())):
		errs = append(errs, fmt.Errorf("account URL %q: https required (http only on loopback)", p.AccountURL))
	case u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		errs = append(errs, fmt.Errorf("account URL %q: want scheme://host[/account] only", p.AccountURL))
	case strings.ContainsAny(u.Path, "%") || strings.Contains(u.Path, "//") || strings.Contains(u.Path, ".."):
		errs = append(errs, fmt.Errorf("account URL %q: odd path", p.AccountURL))
	}
	if !validContainer(p.Container) {
		errs = append(errs, fmt.Errorf("container %q: not a valid container name", p.Container))
	}
	exts := make(map[string]bool, len(p.Extensions))
	for _, e := range p.Extensions {
		if len(e) < 2 || e[0] != '.' || strings.ContainsAny(e[1:], "./\\") {
			errs = append(errs, fmt.Errorf("extension %q: want a dot and a name, like \".txt\"", e))
		}
		exts[strings.ToLower(e)] = true
	}
	if p.MaxDocumentBytes < 1 || p.HeavyThreshold < 1 {
		errs = append(errs, errors.New("max document bytes and heavy threshold must be positive"))
	}
	if p.LightQueue == p.HeavyQueue {
		errs = append(errs, fmt.Errorf("light and heavy queue are both %q", p.LightQueue))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("claim-check policy: %w", err)
	}
	schemeHost := strings.ToLower(u.Scheme + "://" + u.Host)
	pathPrefix := strings.TrimSuffix(u.Path, "/") + "/" + p.Container + "/"
	return &Rules{
		policy:     p,
		schemeHost: schemeHost,
		pathPrefix: pathPrefix,
		prefix:     schemeHost + pathPrefix,
		extensions: exts,
	}, nil
}

// Policy returns the policy in force, defaults applied.
func (r *Rules) Policy() Policy { return r.policy }

// Route returns the queue for a message: HeavyQueue when the document is at
// least HeavyThreshold bytes, LightQueue otherwise.
func (r *Rules) Route(m Message) string {
	if m.Size >= r.policy.HeavyThreshold {
		return r.policy.HeavyQueue
	}
	return r.policy.LightQueue
}

// Validate checks every field of m and reports all problems at once, as an
// outcome.Reject. The blob URL must name a blob in the incoming container
// of the configured account, under the message's own tenant's folder.
func (r *Rules) Validate(m Message) error {
	var errs []error
	if m.Version != Version {
		errs = append(errs, fmt.Errorf("version %d, want %d", m.Version, Version))
	}
	if err := CheckTenant(m.Tenant); err != nil {
		errs = append(errs, err)
	}
	if name, err := r.ParseURL(m.BlobURL); err != nil {
		errs = append(errs, err)
	} else if name.Tenant != m.Tenant {
		errs = append(errs, fmt.Errorf("blob url: under tenant %q, message is for %q", name.Tenant, m.Tenant))
	}
	if m.ETag == "" || len(m.ETag) > maxETag || !printableASCII(m.ETag) {
		errs = append(errs, fmt.Errorf("etag: want 1 to %d printable ASCII characters", maxETag))
	}
	switch {
	case m.Size < 1:
		errs = append(errs, fmt.Errorf("size %d: an empty document has nothing to process", m.Size))
	case m.Size > r.policy.MaxDocumentBytes:
		errs = append(errs, fmt.Errorf("size %d: larger than %d bytes", m.Size, r.policy.MaxDocumentBytes))
	}
	if m.ContentType != "" {
		if _, _, err := mime.ParseMediaType(m.ContentType); err != nil || len(m.ContentType) > maxContentType || !printableASCII(strings.ReplaceAll(m.ContentType, " ", "")) {
			errs = append(errs, fmt.Errorf("content type: want a media type of at most %d bytes", maxContentType))
		}
	}
	if !validModelAlias(m.ModelAlias) {
		errs = append(errs, fmt.Errorf("model alias %q: want [a-z0-9][a-z0-9._-]{0,%d}", truncate(m.ModelAlias), maxModelAlias-1))
	}
	if !ValidCorrelationID(m.CorrelationID) {
		errs = append(errs, fmt.Errorf("correlation id: want 1 to %d characters of text, without control or format characters", MaxCorrelationID))
	}
	if err := errors.Join(errs...); err != nil {
		return outcome.Reject("invalid claim check", err)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validContainer follows Azure's container naming rules: 3–63 of lowercase
// letters, digits and single hyphens, starting and ending with a letter or
// digit.
func validContainer(s string) bool {
	if len(s) < 3 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func validModelAlias(s string) bool {
	if s == "" || len(s) > maxModelAlias {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		lowerOrDigit := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !lowerOrDigit && (i == 0 || (c != '.' && c != '_' && c != '-')) {
			return false
		}
	}
	return true
}

// ValidCorrelationID reports whether s may be a correlation id: text of 1
// to MaxCorrelationID characters in any script, punctuation and spaces
// included ("Zürich–Δ-0042"), as valid UTF-8 without control (Cc) or format
// (Cf) characters, and not only spaces. Such an id is safe in JSON logs,
// whose encoder escapes what needs escaping, and in a claim check.
func ValidCorrelationID(s string) bool {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxCorrelationID || strings.TrimSpace(s) == "" {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return unicode.In(r, unicode.Cc, unicode.Cf) })
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// truncate shortens s for an error message.
func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
