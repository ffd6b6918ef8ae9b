package tablestore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// Default table names.
const (
	DefaultTenantsTable = "offpathtenants"
	DefaultLedgerTable  = "offpathledger"
)

// Connection says how to reach Table Storage: a connection string (shared
// key, Azurite's "UseDevelopmentStorage=true" included), or a table service
// URL with an Entra ID credential (managed identity in Azure).
type Connection struct {
	ConnectionString string
	ServiceURL       string
	Credential       azcore.TokenCredential
}

// DevelopmentStorage is what "UseDevelopmentStorage=true" means: Azurite's
// well-known account on its default blob, queue and table ports.
const DevelopmentStorage = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;" +
	"AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;" +
	"BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1;" +
	"TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;"

// ExpandDevelopmentStorage returns DevelopmentStorage for the shorthand
// "UseDevelopmentStorage=true" (any case, spaces and a trailing ";"
// allowed), and any other connection string as it is: the one place the
// storage clients (tables, blobs, queues) learn what the shorthand means.
func ExpandDevelopmentStorage(cs string) string {
	if strings.EqualFold(strings.TrimRight(strings.TrimSpace(cs), ";"), "UseDevelopmentStorage=true") {
		return DevelopmentStorage
	}
	return cs
}

// NewServiceClient returns a table service client for c. It does no I/O.
func NewServiceClient(c Connection) (*aztables.ServiceClient, error) {
	switch {
	case c.ConnectionString != "":
		s, err := aztables.NewServiceClientFromConnectionString(ExpandDevelopmentStorage(c.ConnectionString), nil)
		if err != nil {
			// The SDK's message may quote the connection string: never pass it on.
			return nil, errors.New("table service client: the storage connection string is malformed")
		}
		return s, nil
	case c.ServiceURL != "" && c.Credential != nil:
		s, err := aztables.NewServiceClient(c.ServiceURL, c.Credential, nil)
		if err != nil {
			return nil, fmt.Errorf("table service client for %s: %w", c.ServiceURL, err)
		}
		return s, nil
	}
	return nil, errors.New("table service client: need a connection string, or a service URL and a credential")
}

// table is an aztables client that creates its table on first write.
type table struct {
	client  *aztables.Client
	mu      sync.Mutex
	created bool
}

func (t *table) ensure(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.created {
		return nil
	}
	if _, err := t.client.CreateTable(ctx, nil); err != nil && !hasCode(err, aztables.TableAlreadyExists) {
		return fmt.Errorf("create table: %w", err)
	}
	t.created = true
	return nil
}

func hasCode(err error, codes ...aztables.TableErrorCode) bool {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return false
	}
	for _, c := range codes {
		if re.ErrorCode == string(c) {
			return true
		}
	}
	return false
}

// isNotFound reports a missing entity or table (a table that was never
// written to holds nothing).
func isNotFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}

// entities yields the entities that opts selects, a page at a time as the
// service returns them, until the caller stops; a table not created yet
// holds none. A failure is yielded once, and ends the sequence.
func (t *table) entities(ctx context.Context, opts *aztables.ListEntitiesOptions) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		pager := t.client.NewListEntitiesPager(opts)
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				if !isNotFound(err) {
					yield(nil, err)
				}
				return
			}
			for _, b := range page.Entities {
				if !yield(b, nil) {
					return
				}
			}
		}
	}
}

// save writes row as a new entity when version is "", else over its
// entity if that is still at version, and returns the new version. stale
// reports that it was not: the entity exists already (a create), or it
// changed or went away since version (an update); callers answer that
// with their conflict.
func (t *table) save(ctx context.Context, row []byte, version string) (string, bool, error) {
	if version != "" {
		return t.replace(ctx, row, version)
	}
	if err := t.ensure(ctx); err != nil {
		return "", false, err
	}
	res, err := t.client.AddEntity(ctx, row, nil)
	if err != nil {
		return "", isPrecondition(err), err
	}
	return string(res.ETag), false, nil
}

// replace writes row over its entity if that is still at version, and
// returns the new version; stale reports that it changed or went away.
func (t *table) replace(ctx context.Context, row []byte, version string) (string, bool, error) {
	etag := azcore.ETag(version)
	res, err := t.client.UpdateEntity(ctx, row, &aztables.UpdateEntityOptions{IfMatch: &etag, UpdateMode: aztables.UpdateModeReplace})
	if err != nil {
		return "", isPrecondition(err) || isNotFound(err), err
	}
	return string(res.ETag), false, nil
}

// isTransactionFailure reports a transaction one of whose operations was
// refused: the service answers 202 with the failure inside, which the SDK
// reports without its code, so callers find out which by reading.
func isTransactionFailure(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && (re.StatusCode == http.StatusAccepted || re.StatusCode == http.StatusConflict ||
		re.StatusCode == http.StatusPreconditionFailed || re.StatusCode == http.StatusNotFound)
}

// quote makes s an OData string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// isBadRequest reports a request the service refused as malformed.
func isBadRequest(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusBadRequest
}
