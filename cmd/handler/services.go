package main

import (
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/config"
	"github.com/offpath/offpath/internal/tablestore"
)

// services are the handler's connections to the storage account: one
// Table Storage client and one Blob Storage client, each built on first
// need and shared by every flow, and one credential per identity shared by
// every client that authenticates as it (storage, Azure OpenAI, Azure
// Monitor, Application Insights). Nothing here does I/O.
type services struct {
	cfg    config.Handler
	creds  map[string]azcore.TokenCredential
	tables *aztables.ServiceClient
	blobs  *azblob.Client
	models *models
	// built counts what was constructed, by kind ("credential", "tables",
	// "blobs"): each is built once, whatever number of flows use it.
	built map[string]int
}

func newServices(cfg config.Handler) *services {
	return &services{cfg: cfg, creds: map[string]azcore.TokenCredential{}, built: map[string]int{}}
}

// credential is the managed identity with the given client id, or
// DefaultAzureCredential (system-assigned identity in Azure, a developer's
// login locally) without one; built once per identity.
func (s *services) credential(clientID string) (azcore.TokenCredential, error) {
	if c, ok := s.creds[clientID]; ok {
		return c, nil
	}
	var c azcore.TokenCredential
	var err error
	if clientID != "" {
		if c, err = azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{ID: azidentity.ClientID(clientID)}); err != nil {
			return nil, fmt.Errorf("managed identity %s: %w", clientID, err)
		}
	} else if c, err = azidentity.NewDefaultAzureCredential(nil); err != nil {
		return nil, fmt.Errorf("default Azure credential: %w", err)
	}
	s.creds[clientID] = c
	s.built["credential"]++
	return c, nil
}

// Tables is the account's Table Storage: by connection string, or by URL
// with the storage identity.
func (s *services) Tables() (*aztables.ServiceClient, error) {
	if s.tables != nil {
		return s.tables, nil
	}
	st := s.cfg.Storage
	conn := tablestore.Connection{ConnectionString: st.ConnectionString.Reveal(), ServiceURL: st.TableServiceURL}
	if conn.ConnectionString == "" {
		cred, err := s.credential(st.ClientID)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", st.Setting, err)
		}
		conn.Credential = cred
	}
	svc, err := tablestore.NewServiceClient(conn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", st.Setting, err)
	}
	s.tables = svc
	s.built["tables"]++
	return svc, nil
}

// Blobs is the account's Blob Storage, reached the way the tables are.
func (s *services) Blobs() (*azblob.Client, error) {
	if s.blobs != nil {
		return s.blobs, nil
	}
	st := s.cfg.Storage
	var c *azblob.Client
	if cs := st.ConnectionString.Reveal(); cs != "" {
		var err error
		if c, err = azblob.NewClientFromConnectionString(tablestore.ExpandDevelopmentStorage(cs), nil); err != nil {
			// The SDK's message may quote the connection string.
			return nil, fmt.Errorf("%s: the storage connection string is malformed", st.Setting)
		}
	} else {
		if st.BlobServiceURL == "" {
			return nil, fmt.Errorf("%s__blobServiceUri is not set", st.Setting)
		}
		cred, err := s.credential(st.ClientID)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", st.Setting, err)
		}
		if c, err = azblob.NewClient(st.BlobServiceURL, cred, nil); err != nil {
			return nil, fmt.Errorf("blob client for %s: %w", st.BlobServiceURL, err)
		}
	}
	s.blobs = c
	s.built["blobs"]++
	return c, nil
}
