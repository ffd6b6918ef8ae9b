package config

import (
	"fmt"
	"strings"
)

// Storage is the storage account: Table Storage (tenants, the ledger,
// jobs, document statuses, leases) and Blob Storage (documents, batch
// inputs and results, tickets, reports), reached the same way. It follows
// the Functions host's own connection conventions, under the setting name
// OFFPATH_STORAGE if any OFFPATH_STORAGE* setting is present (to keep the
// ledger apart from the host's storage), else AzureWebJobsStorage:
//
//	<name>                   a connection string (shared key, or
//	                         UseDevelopmentStorage=true for Azurite)
//	<name>__tableServiceUri  the table endpoint, used with managed identity
//	<name>__blobServiceUri   the blob endpoint, used with managed identity
//	<name>__accountName      the account, for https://<name>.table.core.windows.net
//	                         and https://<name>.blob.core.windows.net
//	<name>__clientId         a user-assigned identity's client id; without
//	                         it DefaultAzureCredential (system-assigned
//	                         identity in Azure, developer logins locally)
//
// The queues (Storage's and Service Bus') are the Functions host's: its
// triggers and output bindings read their own settings, the handler none.
type Storage struct {
	// Setting is the setting name the connection came from.
	Setting string `json:"setting"`
	// ConnectionString is secret: never logged, printed redacted.
	ConnectionString Secret `json:"connection_string"`
	// TableServiceURL and BlobServiceURL are the endpoints reached with the
	// managed identity; empty with a connection string.
	TableServiceURL string `json:"table_service_url,omitempty"`
	BlobServiceURL  string `json:"blob_service_url,omitempty"`
	ClientID        string `json:"client_id,omitempty"`
}

func parseStorage(getenv func(string) string) (Storage, error) {
	name := "AzureWebJobsStorage"
	for _, suffix := range []string{"", "__tableServiceUri", "__accountName", "__clientId"} {
		if getenv("OFFPATH_STORAGE"+suffix) != "" {
			name = "OFFPATH_STORAGE"
			break
		}
	}
	s := Storage{Setting: name, ClientID: getenv(name + "__clientId")}
	cs, tableURI, blobURI, account := getenv(name), getenv(name+"__tableServiceUri"), getenv(name+"__blobServiceUri"), getenv(name+"__accountName")
	if cs != "" {
		if !strings.Contains(cs, "=") {
			return s, fmt.Errorf("%s is not a storage connection string (key=value;...)", name)
		}
		s.ConnectionString = Secret(cs)
		return s, nil
	}
	if account != "" && !validAccount(account) && (tableURI == "" || blobURI == "") {
		return s, fmt.Errorf("%s__accountName %q: must be 3 to 24 lowercase letters and digits", name, account)
	}
	switch {
	case blobURI != "":
		s.BlobServiceURL = strings.TrimRight(blobURI, "/")
	case account != "":
		s.BlobServiceURL = "https://" + account + ".blob.core.windows.net"
	}
	switch {
	case tableURI != "":
		if !httpsURL(tableURI) {
			return s, fmt.Errorf("%s__tableServiceUri %q: must be an https URL (http only on loopback)", name, tableURI)
		}
		s.TableServiceURL = strings.TrimRight(tableURI, "/")
	case account != "":
		s.TableServiceURL = "https://" + account + ".table.core.windows.net"
	default:
		return s, fmt.Errorf("%s is not set: tenants and the ledger need Table Storage (a connection string, or %s__tableServiceUri or __accountName with a managed identity)", name, name)
	}
	return s, nil
}

func validAccount(s string) bool {
	if len(s) < 3 || len(s) > 24 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
