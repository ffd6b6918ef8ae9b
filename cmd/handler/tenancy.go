package main

import (
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/config"
	"github.com/offpath/offpath/internal/entra"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tokenmetrics"
)

// tenancy is what knows tenants and their usage: the stores and the
// authenticator over them.
type tenancy struct {
	// tables is the one Table Storage client every store of the handler
	// shares (one credential, one connection pool).
	tables   *aztables.ServiceClient
	tenants  *tablestore.Tenants
	ledger   *tablestore.Ledger
	webhooks *tablestore.Webhooks
	// docs are the document statuses, where rejections are recorded.
	docs *tablestore.Documents
	// alerts is the record of raised alerts that every alert sender keeps
	// and the console reads.
	alerts *tablestore.Alerts
	auth   *auth.Authenticator
	// prom, when the Prometheus endpoint is served, counts the queue path's
	// outcomes.
	prom *tokenmetrics.Prometheus
}

// newTenancy builds the stores on the Table Storage client svc and the
// authenticator. It does no I/O: tables are created on first write, signing
// keys fetched on the first Entra token, so start-up stays fast.
func newTenancy(cfg config.Handler, svc *aztables.ServiceClient, metrics ledger.Metrics) (tenancy, error) {
	var err error
	t := tenancy{
		tables:   svc,
		tenants:  tablestore.NewTenants(svc, tablestore.DefaultTenantsTable),
		ledger:   tablestore.NewLedger(svc, tablestore.LedgerOptions{Metrics: metrics}),
		webhooks: tablestore.NewWebhooks(svc, tablestore.DefaultWebhooksTable),
		docs:     tablestore.NewDocuments(svc, "", nil),
		alerts:   tablestore.NewAlerts(svc, "", 0, nil),
	}
	var verifier *entra.Verifier
	if cfg.Entra != nil {
		verifier, err = entra.NewVerifier(entra.Options{Issuers: cfg.Entra.Issuers, Audiences: cfg.Entra.Audiences,
			Keys: entra.NewJWKS(cfg.Entra.JWKSURL, entra.JWKSOptions{}), AppOnly: *cfg.Entra.AppOnly, Roles: cfg.Entra.Roles})
		if err != nil {
			return tenancy{}, err
		}
	}
	t.auth = auth.New(auth.Options{Credentials: t.tenants, AdminKeyHashes: cfg.AdminKeyHashes, Entra: verifier,
		TTL: cfg.AuthCacheTTL, RevocationBound: cfg.AuthRevocationBound, FailuresPerMinute: cfg.AuthFailuresPerMinute})
	return t, nil
}
