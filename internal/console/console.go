// Package console is the console page: one self-contained HTML page, served
// by the API at /api/v1/console/, for a tenant (its batch jobs with live
// progress, results, cancel, its spend as charts) and for the operator
// with the admin key (every tenant's spend, alerts raised, jobs held for
// quota, the second door's findings, the morning reports).
//
// The page is one request: its style and script are inline, embedded in
// the binary, and the Content-Security-Policy allows exactly those two by
// their SHA-256 hashes, connections to its own origin and nothing else (no
// external asset, no inline handler, no eval), so it works offline and a
// value the API returns can never run as code. Charts are inline SVG drawn
// by its own script. The person signs in with the credential they already
// have; the page keeps it in the tab's session storage and sends it as a
// bearer token to the same origin, with the Functions host's function key
// (from the page's ?code= or typed in) as x-functions-key.
package console

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"net/http"
	"strings"
)

var (
	//go:embed page.html
	pageHTML []byte
	//go:embed page.css
	pageCSS []byte
	//go:embed page.js
	pageJS []byte
)

// Handler serves the page.
type Handler struct {
	page []byte
	csp  string
}

// New assembles the page and its policy.
func New() *Handler {
	page := bytes.Replace(pageHTML, []byte("/*STYLE*/"), pageCSS, 1)
	page = bytes.Replace(page, []byte("/*SCRIPT*/"), pageJS, 1)
	csp := strings.Join([]string{
		"default-src 'none'",
		"script-src '" + hash(pageJS) + "'",
		"style-src '" + hash(pageCSS) + "'",
		"connect-src 'self'",
		"img-src 'self' data:",
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors 'none'",
	}, "; ")
	return &Handler{page: page, csp: csp}
}

func hash(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// ServeHTTP answers with the page; the API routes GET /api/v1/console/
// here, and only that.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Security-Policy", h.csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	_, _ = w.Write(h.page)
}
