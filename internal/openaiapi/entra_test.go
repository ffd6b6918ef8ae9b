package openaiapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/apptest"
	"github.com/offpath/offpath/internal/testing/entratest"
)

// TestOpenAIGo_EntraToken: an application that authenticates with an
// Entra ID access token, mapped to its tenant, uses the door as with a
// key; a token of an application mapped to no tenant is a 401.
func TestOpenAIGo_EntraToken(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	signer := entratest.New(t, "door-key")
	speed := 20000.0
	s := apptest.Start(t, apptest.Config{Sim: aoaisim.Config{Deployments: aoaisim.DefaultDeployments(), Speed: &speed},
		Settings: map[string]string{"OFFPATH_ENTRA_ISSUERS": entratest.Issuer, "OFFPATH_ENTRA_AUDIENCES": entratest.Audience,
			"OFFPATH_ENTRA_JWKS_URL": entratest.Serve(t, signer)}})
	const app = "aaaaaaaa-0000-4000-8000-00000000d00e"
	if st := s.DoAdmin(http.MethodPatch, "/api/v1/tenants/contoso", map[string]any{"app_ids": []string{app}}, nil); st != http.StatusOK {
		t.Fatalf("map the application: %d", st)
	}
	client := func(appID string) openai.Client {
		return openai.NewClient(option.WithBaseURL(s.URL+"/api/openai/v1/"), option.WithMaxRetries(0),
			option.WithAPIKey(signer.Token(t, entratest.Claims(appID, time.Now()), nil)), option.WithHeader("x-functions-key", apptest.FunctionKey))
	}
	c := client(app)
	f, err := upload(t, c, "entra.jsonl", jsonl(t, "en", 3, nil))
	if err != nil {
		t.Fatalf("upload with a token: %v", describe(err))
	}
	b := await(t, c, create(t, c, f.ID).ID, terminal)
	if b.Status != openai.BatchStatusCompleted || len(download(t, c, b.OutputFileID)) != 3 {
		t.Errorf("batch %s %+v", b.Status, b.RequestCounts)
	}
	// The same batch is contoso's, whichever credential reads it.
	byKey := v1Client(s, "contoso")
	if got, err := byKey.Batches.Get(context.Background(), b.ID); err != nil || got.ID != b.ID {
		t.Errorf("contoso's key reading the batch: %v", describe(err))
	}
	unmapped := client("bbbbbbbb-0000-4000-8000-00000000d00e")
	if _, err := unmapped.Batches.List(context.Background(), openai.BatchListParams{}); apiError(t, err).StatusCode != http.StatusUnauthorized {
		t.Errorf("an unmapped application: %v", describe(err))
	}
}
