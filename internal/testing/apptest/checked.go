package apptest

import (
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/offpath/offpath/internal/testing/openapitest"
)

// checkedProxy serves hostURL through a proxy that checks every exchange
// of the API against its OpenAPI document, so that every test through the
// stack, whatever its client (openai-go, the Node SDK, the CLI, a
// browser), holds the document to what the real handler behind the real
// host answers. It returns the proxy's URL.
func checkedProxy(tb testing.TB, hostURL string) string {
	tb.Helper()
	target, err := url.Parse(hostURL)
	if err != nil {
		tb.Fatalf("the dev host's URL %q: %v", hostURL, err)
	}
	srv := httptest.NewServer(openapitest.New(tb).BehindHost().Handler(httputil.NewSingleHostReverseProxy(target)))
	tb.Cleanup(srv.Close)
	return srv.URL
}
