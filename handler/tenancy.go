package main

import (
	"fmt"
	"github.com/offpath/offpath/internal/tokenmetrics"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/config"
	"github.com/offpath/offpath/internal/entra"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tablestore"
)

// tenancy is what knows tenants and their usage: the stores and the
// authenticator over them.
type tenancy struct {
	tenants  *tablestore.Tenants
	ledger   *tablestore.Ledger
	webhooks *tablestore.Webhooks
	// docs are the document statuses, where rejections are recorded.
	docs *tablestore.Documents
	auth *auth.Authenticator
	// prom, when the Prometheus endpoint is served, counts the queue path's
	// outcomes and the poll tick's jobs by state.
	prom *tokenmetrics.Prometheus
}

// newTenancy builds the Table Storage clients and the authenticator. It does
// no I/O: tables are created on first write, signing keys fetched on the
// first Entra token, so start-up stays fast.
func newTenancy(cfg config.Handler, metrics ledger.Metrics) (tenancy, error) {
	conn := tablestore.Connection{ConnectionString: cfg.Storage.ConnectionString, ServiceURL: cfg.Storage.TableServiceURL}
	if conn.ConnectionString == "" {
		cred, err := credential(cfg.Storage.ClientID)
		if err != nil {
			return tenancy{}, fmt.Errorf("%s: %w", cfg.Storage.Setting, err)
		}
		conn.Credential = cred
	}
	svc, err := tablestore.NewServiceClient(conn)
	if err != nil {
		return tenancy{}, fmt.Errorf("%s: %w", cfg.Storage.Setting, err)
	}
	t := tenancy{
		tenants:  tablestore.NewTenants(svc, tablestore.DefaultTenantsTable),
		ledger:   tablestore.NewLedger(svc, tablestore.LedgerOptions{Metrics: metrics}),
		webhooks: tablestore.NewWebhooks(svc, tablestore.DefaultWebhooksTable),
		docs:     tablestore.NewDocuments(svc, "", nil),
	}
	var verifier *entra.Verifier
	if cfg.Entra != nil {
		verifier, err = entra.NewVerifier(entra.Options{Issuers: cfg.Entra.Issuers, Audiences: cfg.Entra.Audiences,
			Keys: entra.NewJWKS(cfg.Entra.JWKSURL, entra.JWKSOptions{}), AppOnly: cfg.Entra.AppOnly, Roles: cfg.Entra.Roles})
		if err != nil {
			return tenancy{}, err
		}
	}
	t.auth = auth.New(auth.Options{Credentials: t.tenants, AdminKeyHashes: cfg.AdminKeyHashes, Entra: verifier,
		TTL: cfg.AuthCacheTTL, RevocationBound: cfg.AuthRevocationBound, FailuresPerMinute: cfg.AuthFailuresPerMinute})
	return t, nil
}

// credential is the managed identity with the given client id, or
// DefaultAzureCredential (system-assigned identity in Azure, a developer's
// login locally) without one.
func credential(clientID string) (azcore.TokenCredential, error) {
	if clientID != "" {
		c, err := azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{ID: azidentity.ClientID(clientID)})
		if err != nil {
			return nil, fmt.Errorf("managed identity %s: %w", clientID, err)
		}
		return c, nil
	}
	c, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, fmt.Errorf("default Azure credential: %w", err)
	}
	return c, nil
}
