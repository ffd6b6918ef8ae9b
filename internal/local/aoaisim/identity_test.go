package aoaisim_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/local/aoaisim"
)

// TestIdentity_AppServiceEndpoint: over TLS (StartTLS, its certificate
// trusted by the client), the managed identity endpoint answers App
// Service's protocol: X-IDENTITY-HEADER and api-version 2019-08-01
// required, a token for the resource asked; the metrics API (Azure
// Resource Manager) takes such a token for ARM's audience, and refuses
// the API key, a token of another audience, and a token nobody issued.
func TestIdentity_AppServiceEndpoint(t *testing.T) {
	t.Parallel()
	srv, err := aoaisim.New(aoaisim.Config{Deployments: testDeployments(), IdentityHeader: "the-secret"}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	base, certPEM, err := srv.StartTLS("")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		t.Fatal("the certificate PEM does not parse")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	if _, err := http.Get(base + aoaisim.IdentityPath); err == nil {
		t.Error("a client without the certificate connected")
	}
	get := func(path string, q url.Values, h map[string]string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path+"?"+q.Encode(), nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(res.Body).Decode(&body)
		return res.StatusCode, body
	}
	ask := func(resource string) url.Values {
		return url.Values{"api-version": {aoaisim.IdentityAPIVersion}, "resource": {resource}}
	}
	secret := map[string]string{"X-IDENTITY-HEADER": "the-secret"}
	for _, tc := range []struct {
		name string
		q    url.Values
		h    map[string]string
		want int
	}{
		{"no header", ask("https://management.azure.com"), nil, 401},
		{"wrong header", ask("https://management.azure.com"), map[string]string{"X-IDENTITY-HEADER": "guess"}, 401},
		{"old api-version", url.Values{"api-version": {"2017-09-01"}, "resource": {"https://management.azure.com"}}, secret, 400},
		{"no resource", url.Values{"api-version": {aoaisim.IdentityAPIVersion}}, secret, 400},
	} {
		if code, _ := get(aoaisim.IdentityPath, tc.q, tc.h); code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, code, tc.want)
		}
	}
	code, tok := get(aoaisim.IdentityPath, ask("https://management.azure.com"), secret)
	exp, _ := strconv.ParseInt(tok["expires_on"].(string), 10, 64)
	if code != 200 || tok["access_token"] == "" || tok["token_type"] != "Bearer" || tok["resource"] != "https://management.azure.com" ||
		time.Unix(exp, 0).Before(time.Now().Add(time.Hour)) {
		t.Fatalf("token answer %d %v", code, tok)
	}
	_, other := get(aoaisim.IdentityPath, ask("https://cognitiveservices.azure.com"), secret)

	metrics := "/subscriptions/s/resourceGroups/rg/providers/Microsoft.CognitiveServices/accounts/a/providers/Microsoft.Insights/metrics"
	q := url.Values{"api-version": {"2024-02-01"}, "metricnames": {aoaisim.MetricPromptTokens}}
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"ARM token", "Bearer " + tok["access_token"].(string), 200},
		{"API key as bearer", "Bearer " + aoaisim.DefaultKey, 401},
		{"another audience's token", "Bearer " + other["access_token"].(string), 401},
		{"a token nobody issued", "Bearer eyJhbGciOiJub25lIn0.e30.", 401},
		{"none", "", 401},
	} {
		if code, body := get(metrics, q, map[string]string{"Authorization": tc.auth}); code != tc.want {
			t.Errorf("metrics with %s: %d %v, want %d", tc.name, code, body, tc.want)
		}
	}
	if code, _ := get(metrics, q, map[string]string{"api-key": aoaisim.DefaultKey}); code != 401 {
		t.Errorf("metrics with the api-key header: %d, want 401", code)
	}
}
