package entra_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/entra"
	"github.com/offpath/offpath/internal/testing/entratest"
)

const app = "0b5e2a3c-1111-2222-3333-444455556666"

func TestVerifier_Verify(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	signer := entratest.New(t, "k1")
	other := entratest.New(t, "k1") // same kid, different key: a forgery
	v, err := entra.NewVerifier(entra.Options{
		Issuers: []string{entratest.Issuer, "https://sts.windows.net/" + entratest.DirectoryID + "/"}, Audiences: []string{entratest.Audience},
		Keys: signer.Keys(), Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	with := func(mutate func(map[string]any)) map[string]any {
		c := entratest.Claims(app, now)
		mutate(c)
		return c
	}
	tests := []struct {
		name    string
		token   string
		wantErr string
	}{
		{"valid v2", signer.Token(t, entratest.Claims(app, now), nil), ""},
		{"valid v1 appid", signer.Token(t, with(func(c map[string]any) {
			delete(c, "azp")
			c["appid"], c["iss"] = app, "https://sts.windows.net/"+entratest.DirectoryID+"/"
		}), nil), ""},
		{"audience in a list", signer.Token(t, with(func(c map[string]any) { c["aud"] = []string{"other", entratest.Audience} }), nil), ""},
		{"expired within leeway", signer.Token(t, with(func(c map[string]any) { c["exp"] = now.Add(-10 * time.Second).Unix() }), nil), ""},
		{"expired", signer.Token(t, with(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() }), nil), "expired"},
		{"not yet valid", signer.Token(t, with(func(c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() }), nil), "not valid before"},
		{"no exp", signer.Token(t, with(func(c map[string]any) { delete(c, "exp") }), nil), "exp missing"},
		{"wrong audience", signer.Token(t, with(func(c map[string]any) { c["aud"] = "api://someone-else" }), nil), "audience"},
		{"no audience", signer.Token(t, with(func(c map[string]any) { delete(c, "aud") }), nil), "aud missing"},
		{"wrong issuer", signer.Token(t, with(func(c map[string]any) { c["iss"] = "https://evil.example/v2.0" }), nil), "issuer"},
		{"no app", signer.Token(t, with(func(c map[string]any) { delete(c, "azp") }), nil), "no azp or appid"},
		{"forged signature", other.Token(t, entratest.Claims(app, now), nil), "bad signature"},
		{"unknown kid", signer.Token(t, entratest.Claims(app, now), map[string]any{"kid": "k2"}), "unknown signing key"},
		{"no kid", signer.Token(t, entratest.Claims(app, now), map[string]any{"kid": ""}), "no kid"},
		{"alg none", signer.Token(t, entratest.Claims(app, now), map[string]any{"alg": "none"}), "not RS256"},
		{"alg HS256", signer.Token(t, entratest.Claims(app, now), map[string]any{"alg": "HS256"}), "not RS256"},
		{"two parts", "eyJhbGciOiJSUzI1NiJ9.eyJ9", "three"},
		{"four parts", "a.b.c.d", "three"},
		{"garbage", "!!!.???.***", "header"},
		{"huge", strings.Repeat("a", entra.MaxTokenLen+1), "longer than"},
	}
	tampered := signer.Token(t, entratest.Claims(app, now), nil)
	parts := strings.Split(tampered, ".")
	evil := signer.Token(t, entratest.Claims("99999999-9999-9999-9999-999999999999", now), nil)
	tests = append(tests, struct{ name, token, wantErr string }{"claims swapped", parts[0] + "." + strings.Split(evil, ".")[1] + "." + parts[2], "bad signature"})

	// Claims read strictly: what encoding/json would let through is refused.
	good, err := json.Marshal(entratest.Claims(app, now))
	if err != nil {
		t.Fatal(err)
	}
	body := strings.TrimSuffix(string(good), "}")
	exp, nbf := strconv.FormatInt(now.Add(time.Hour).Unix(), 10), strconv.FormatInt(now.Add(-time.Minute).Unix(), 10)
	for _, c := range []struct{ name, claims, wantErr string }{
		{"raw claims as encoded", string(good), ""},
		{"trailing data after the claims", string(good) + `{"aud":"api://other"}`, "data after"},
		{"trailing garbage after the claims", string(good) + " x", "data after"},
		{"a claim twice", body + `,"azp":"99999999-9999-9999-9999-999999999999"}`, "twice"},
		{"claim name in another case", body + `,"ISS":"https://evil.example/v2.0"}`, ""}, // an unknown claim, ignored: iss stays the genuine one
		{"only an upper-case exp", strings.Replace(string(good), `"exp":`, `"EXP":`, 1), "exp missing"},
		{"only an upper-case aud", strings.Replace(string(good), `"aud":`, `"Aud":`, 1), "aud missing"},
		{"exp as a string", strings.Replace(string(good), `"exp":`+exp, `"exp":"`+exp+`"`, 1), "exp missing"},
		{"nbf as a string", strings.Replace(string(good), `"nbf":`+nbf, `"nbf":"`+nbf+`"`, 1), "nbf is not a number"},
		{"exp as true", strings.Replace(string(good), `"exp":`+exp, `"exp":true`, 1), "exp missing"},
		{"iss as a list", strings.Replace(string(good), `"iss":"`+entratest.Issuer+`"`, `"iss":["`+entratest.Issuer+`"]`, 1), "issuer"},
		{"aud as a number", strings.Replace(string(good), `"aud":"`+entratest.Audience+`"`, `"aud":7`, 1), "aud missing"},
		{"roles not a list", body + `,"roles":"Tenant"}`, "roles"},
		{"azp and appid disagree", body + `,"appid":"99999999-9999-9999-9999-999999999999"}`, "disagreeing"},
		{"claims not an object", `["iss"]`, "not a JSON object"},
		{"claims with an escaped character", body + `,"name":"\u00ff"}`, ""},
		{"claims with a raw invalid byte", body + ",\"name\":\"\xff\"}", "UTF-8"},
	} {
		tests = append(tests, struct{ name, token, wantErr string }{c.name, signer.TokenRaw(t, c.claims), c.wantErr})
	}
	for _, c := range []struct{ name, header, wantErr string }{
		{"header with data after it", `{"alg":"RS256","kid":"k1"}{"alg":"none"}`, "data after"},
		{"header alg twice", `{"alg":"none","alg":"RS256","kid":"k1"}`, "twice"},
		{"header ALG in upper case", `{"ALG":"RS256","kid":"k1"}`, "not RS256"},
		{"header kid as a number", `{"alg":"RS256","kid":1}`, "no kid"},
		{"header with crit", `{"alg":"RS256","kid":"k1","crit":["exp"]}`, "critical"},
	} {
		tests = append(tests, struct{ name, token, wantErr string }{c.name, signer.TokenWithHeader(t, c.header, entratest.Claims(app, now)), c.wantErr})
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := v.Verify(context.Background(), tt.token)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Verify() = %v", err)
				}
				if c.AppID != app || c.Audience != entratest.Audience || c.TenantID != entratest.DirectoryID {
					t.Errorf("claims = %+v", c)
				}
				return
			}
			if !errors.Is(err, entra.ErrInvalidToken) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Verify() = %v, want ErrInvalidToken with %q", err, tt.wantErr)
			}
			if len(tt.token) > 20 && strings.Contains(err.Error(), tt.token[len(tt.token)-20:]) {
				t.Errorf("error quotes the token: %v", err)
			}
		})
	}
}

func TestNewVerifier_RequiresEverything(t *testing.T) {
	t.Parallel()
	if _, err := entra.NewVerifier(entra.Options{Issuers: []string{"x"}, Keys: entra.StaticKeys{}}); err == nil {
		t.Error("NewVerifier without audiences: no error")
	}
}

func TestVerifier_AppOnly(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	signer := entratest.New(t, "k1")
	verifier := func(appOnly bool, roles ...string) *entra.Verifier {
		v, err := entra.NewVerifier(entra.Options{Issuers: []string{entratest.Issuer}, Audiences: []string{entratest.Audience},
			Keys: signer.Keys(), Now: func() time.Time { return now }, AppOnly: appOnly, Roles: roles})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	with := func(c map[string]any, mutate func(map[string]any)) string {
		mutate(c)
		return signer.Token(t, c, nil)
	}
	appToken := signer.Token(t, entratest.Claims(app, now), nil)
	delegated := signer.Token(t, entratest.DelegatedClaims(app, now), nil)
	noIDType := with(entratest.Claims(app, now), func(c map[string]any) { delete(c, "idtyp") })
	withRole := with(entratest.Claims(app, now), func(c map[string]any) { delete(c, "idtyp"); c["roles"] = []string{"Offpath.Tenant"} })
	otherRole := with(entratest.Claims(app, now), func(c map[string]any) { c["roles"] = []string{"Reader"} })
	delegatedWithRole := with(entratest.DelegatedClaims(app, now), func(c map[string]any) { c["roles"] = []string{"Offpath.Tenant"} })
	scpOnly := with(entratest.Claims(app, now), func(c map[string]any) { c["scp"] = "user_impersonation" })

	tests := []struct {
		name    string
		v       *entra.Verifier
		token   string
		wantErr string
	}{
		{"app token, idtyp app", verifier(true), appToken, ""},
		{"delegated token refused", verifier(true), delegated, "delegated"},
		{"scp without idtyp user refused", verifier(true), scpOnly, "delegated"},
		{"no idtyp and no role refused", verifier(true), noIDType, "idtyp is not app"},
		{"required role admits", verifier(true, "Offpath.Tenant"), withRole, ""},
		{"required role missing", verifier(true, "Offpath.Tenant"), otherRole, "no required role"},
		{"idtyp app without the required role", verifier(true, "Offpath.Tenant"), appToken, "no required role"},
		{"delegated token with the role refused", verifier(true, "Offpath.Tenant"), delegatedWithRole, "delegated"},
		{"option off: delegated accepted", verifier(false), delegated, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := tt.v.Verify(context.Background(), tt.token)
			if tt.wantErr == "" {
				if err != nil || c.AppID != app {
					t.Fatalf("Verify() = %+v, %v", c, err)
				}
				return
			}
			if !errors.Is(err, entra.ErrInvalidToken) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Verify() = %v, want ErrInvalidToken with %q", err, tt.wantErr)
			}
		})
	}
}
