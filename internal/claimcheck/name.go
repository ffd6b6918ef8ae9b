package claimcheck

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/offpath/offpath/internal/ident"
	"github.com/offpath/offpath/internal/outcome"
)

// Blob name limits. Azure allows 1,024 characters and 254 segments; offpath
// counts the 1,024 in bytes, which is stricter, so that an escaped URL and
// the message around it have a small fixed bound.
const (
	MaxNameBytes    = 1024
	MaxNameSegments = 254
)

// maxUnescapes bounds how many layers of percent-encoding a name is checked
// through ("%252e%252e" is ".." twice removed).
const maxUnescapes = 3

// BlobName is a validated blob name in the incoming container.
type BlobName struct {
	// Name is the whole name inside the container: "acme/reports/q1.txt".
	Name string
	// Tenant is its first segment: "acme".
	Tenant string
	// Path is the rest, below the tenant's folder: "reports/q1.txt".
	Path string
	// Ext is the extension of the last segment, lowercase: ".txt".
	Ext string
}

// CheckTenant reports whether s is a tenant id: a lowercase letter, then 1 to
// 62 lowercase letters, digits or hyphens (^[a-z][a-z0-9-]{1,62}$).
func CheckTenant(s string) error {
	ok := len(s) >= 2 && len(s) <= 63 && s[0] >= 'a' && s[0] <= 'z'
	for i := 1; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
	}
	if !ok {
		return fmt.Errorf("tenant %q: want ^[a-z][a-z0-9-]{1,62}$", truncate(s))
	}
	return nil
}

// SplitTenant splits a blob name bound from "incoming/{name}" into the
// tenant (its first segment) and the rest. The host binds tokens greedily,
// so a trigger on "incoming/{tenant}/{name}" would give a tenant with
// slashes in it; this is the split that trigger needs. It checks only the
// tenant's format; Rules.ParseName checks the whole name.
func SplitTenant(name string) (tenant, rest string, err error) {
	tenant, rest, ok := strings.Cut(name, "/")
	if !ok || rest == "" {
		return "", "", outcome.Reject("blob outside a tenant folder", fmt.Errorf("name %q: want {tenant}/{file}", truncate(name)))
	}
	if err := CheckTenant(tenant); err != nil {
		return "", "", outcome.Reject("invalid tenant folder", err)
	}
	return tenant, rest, nil
}

// ParseName validates a blob name in the incoming container (the {name} of
// "incoming/{name}") and splits it. It rejects names that are not valid
// UTF-8, longer than MaxNameBytes or MaxNameSegments, with characters the
// identifier rule refuses (control and format characters, ...), backslashes, empty, "." or ".." segments or segments
// ending in a dot (also after percent-decoding, up to three layers), not
// under a valid tenant folder, or without a supported extension.
func (r *Rules) ParseName(name string) (BlobName, error) {
	if err := checkName(name); err != nil {
		return BlobName{}, outcome.Reject("invalid blob name", err)
	}
	tenant, rest, err := SplitTenant(name)
	if err != nil {
		return BlobName{}, err
	}
	base := path.Base(rest)
	ext := strings.ToLower(path.Ext(base))
	if ext == base || !r.extensions[ext] {
		return BlobName{}, outcome.Reject("unsupported document type", fmt.Errorf("name %q: extension %q is not one of %v", truncate(name), ext, r.policy.Extensions))
	}
	return BlobName{Name: name, Tenant: tenant, Path: rest, Ext: ext}, nil
}

// CheckName applies ParseName's rules of characters, length and segments
// to a document's name, without those of tenant and type: what any name
// must satisfy before it is looked up.
func CheckName(name string) error { return checkName(name) }

// checkName applies the character and segment rules to name and to each
// layer of its percent-decoding.
func checkName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if len(name) > MaxNameBytes {
		return fmt.Errorf("name of %d bytes: longer than %d", len(name), MaxNameBytes)
	}
	for layer := 0; ; layer++ {
		if err := checkLayer(name); err != nil {
			if layer > 0 {
				return fmt.Errorf("after percent-decoding: %w", err)
			}
			return err
		}
		if !strings.Contains(name, "%") || layer == maxUnescapes {
			return nil
		}
		decoded, err := url.PathUnescape(name)
		if err != nil || decoded == name {
			return nil // "100% done.txt" is a name, not an encoding
		}
		name = decoded
	}
}

func checkLayer(name string) error {
	if err := ident.Check(name); err != nil {
		return err
	}
	if i := strings.IndexByte(name, '\\'); i >= 0 {
		return fmt.Errorf("backslash at byte %d", i)
	}
	segs := strings.Split(name, "/")
	if len(segs) > MaxNameSegments {
		return fmt.Errorf("%d segments: more than %d", len(segs), MaxNameSegments)
	}
	for i, s := range segs {
		switch {
		case s == "":
			return fmt.Errorf("empty segment %d", i)
		case s == "." || s == "..":
			return fmt.Errorf("segment %d is %q", i, s)
		case strings.HasSuffix(s, "."):
			return fmt.Errorf("segment %d ends with a dot", i)
		}
	}
	return nil
}

// BlobURL returns the URL of name: the account URL, the container, and each
// segment percent-escaped with the slashes kept, as the host's Uri spells it.
func (r *Rules) BlobURL(name BlobName) string {
	segs := strings.Split(name.Name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.TrimSuffix(r.policy.AccountURL, "/") + "/" + r.policy.Container + "/" + strings.Join(segs, "/")
}

// ParseURL checks that raw is the URL of a blob in the incoming container of
// the configured account (same scheme, host and port; no credentials, query
// or fragment) and returns its validated name. Escaped slashes ("%2F", as
// the SDK writes them) and plain ones are both accepted; the name is checked
// after unescaping.
func (r *Rules) ParseURL(raw string) (BlobName, error) {
	if raw == "" {
		return BlobName{}, errors.New("blob url: required")
	}
	if !printableASCII(raw) {
		return BlobName{}, errors.New("blob url: not printable ASCII (names are percent-escaped)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return BlobName{}, fmt.Errorf("blob url: %w", err)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#") {
		return BlobName{}, errors.New("blob url: credentials, query or fragment not allowed")
	}
	if strings.ToLower(u.Scheme+"://"+u.Host) != r.schemeHost || len(raw) < len(r.schemeHost) || !strings.EqualFold(raw[:len(r.schemeHost)], r.schemeHost) {
		return BlobName{}, fmt.Errorf("blob url: not in account %s", r.policy.AccountURL)
	}
	escaped, ok := strings.CutPrefix(raw[len(r.schemeHost):], r.pathPrefix)
	if !ok {
		return BlobName{}, fmt.Errorf("blob url: not in container %q of %s", r.policy.Container, r.policy.AccountURL)
	}
	name, err := url.PathUnescape(escaped)
	if err != nil {
		return BlobName{}, fmt.Errorf("blob url: %w", err)
	}
	b, err := r.ParseName(name)
	if err != nil {
		return BlobName{}, fmt.Errorf("blob url: %w", err)
	}
	return b, nil
}
