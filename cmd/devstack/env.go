package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/local/devhost"
)

// stackInfo is what runs where.
type stackInfo struct {
	HostURL, SimURL string
	Azurite         *azurite.Azurite
	App             *devhost.App
	Settings        map[string]string
	Demo            demo
	State, Logs     string
}

// envVar is one line of the env file.
type envVar struct{ name, value, about string }

// uploadsSASLifetime is how long the env file's SAS for the batch uploads
// container works: longer than any make run.
const uploadsSASLifetime = 7 * 24 * time.Hour

// writeEnv writes the stack's coordinates, for local use only, to path
// (mode 0600: it holds keys) as shell exports that `source` reads; it
// returns them. The batch uploads container is made if missing, and a SAS
// for it lets curl upload a corpus as it would to Azure.
func writeEnv(ctx context.Context, path string, blobs *azblob.Client, s stackInfo) ([]envVar, error) {
	uploads := blobs.ServiceClient().NewContainerClient(batch.DefaultUploadsContainer)
	if _, err := uploads.Create(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return nil, fmt.Errorf("create %s: %w", batch.DefaultUploadsContainer, err)
	}
	sasURL, err := uploads.GetSASURL(sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, List: true},
		time.Now().Add(uploadsSASLifetime), nil)
	if err != nil {
		return nil, fmt.Errorf("SAS for %s: %w", batch.DefaultUploadsContainer, err)
	}
	containerURL, query, _ := strings.Cut(sasURL, "?")
	keys := s.Demo.keys
	vars := []envVar{
		{"OFFPATH_URL", s.HostURL, "the function app (dev host): the API is $OFFPATH_URL/api/v1"},
		{"OFFPATH_FUNCTION_KEY", s.Settings["DEVHOST_FUNCTION_KEY"], "x-functions-key for the HTTP functions"},
		{"OFFPATH_MASTER_KEY", s.Settings["DEVHOST_MASTER_KEY"], "x-functions-key for /admin/functions/{name} (run a timer now)"},
		{"CONTOSO_KEY", keys.Tenants["contoso"], "tenant contoso's API key (Authorization: Bearer)"},
		{"FABRIKAM_KEY", keys.Tenants["fabrikam"], "tenant fabrikam's API key"},
		{"SUPPORT_KEY", keys.Tenants["support"], "tenant support's API key (the nightly summaries)"},
		{"OFFPATH_ADMIN_KEY", keys.Admin, "the admin key (tenants, everyone's usage)"},
		{"OFFPATH_API_KEY", keys.Tenants["contoso"], "the key the CLI's API commands use: contoso's"},
		{"OFFPATH_STORAGE", s.Azurite.ConnectionString(), "Azurite's connection string, for the CLI's storage commands"},
		{"OFFPATH_UPLOADS_URL", containerURL, "the batch uploads container (a tenant's corpora under <tenant>/)"},
		{"OFFPATH_UPLOADS_SAS", query, "a SAS for it, to upload with curl: PUT $OFFPATH_UPLOADS_URL/<name>?$OFFPATH_UPLOADS_SAS"},
		{"AOAISIM_URL", s.SimURL, "the Azure OpenAI simulator (its admin API under /_sim/)"},
		{"AOAISIM_KEY", aoaisim.DefaultKey, "the simulator's api-key"},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# offpath's local stack (make run), for local use only: source %s\n", path)
	for _, v := range vars {
		fmt.Fprintf(&b, "export %s=%s  # %s\n", v.name, shellQuote(v.value), v.about)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("env file: %w", err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return nil, fmt.Errorf("env file: %w", err)
	}
	return vars, nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// readEnv reads an env file that writeEnv wrote.
func readEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w (is make run running?)", err)
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "export ")
		if !ok {
			continue
		}
		name, rest, _ := strings.Cut(line, "=")
		value, _, _ := strings.Cut(strings.TrimPrefix(rest, "'"), "'  # ")
		vars[name] = strings.ReplaceAll(value, `'\''`, "'")
	}
	return vars, sc.Err()
}

// banner prints what runs where and how to use it.
func banner(w io.Writer, s stackInfo, env []envVar) {
	k := s.Settings["DEVHOST_FUNCTION_KEY"]
	fmt.Fprintf(w, "\n  What runs where\n")
	fmt.Fprintf(w, "    API                     %s/api/v1   (x-functions-key %s; the OpenAI-compatible door: %s/api/openai/v1)\n", s.HostURL, k, s.HostURL)
	fmt.Fprintf(w, "    dev host (Functions)    %s   %d functions; run a timer now: POST /admin/functions/{name} with the master key\n", s.HostURL, len(s.App.Functions))
	fmt.Fprintf(w, "    Azure OpenAI simulator  %s   (api-key %s; clock and faults under /_sim/)\n", s.SimURL, aoaisim.DefaultKey)
	fmt.Fprintf(w, "    Azurite                 blob %s  queue %s  table %s\n", s.Azurite.BlobURL, s.Azurite.QueueURL, s.Azurite.TableURL)
	fmt.Fprintf(w, "    logs                    %s (handler.log, devhost.log, azurite.log); token metrics: %s\n", s.Logs, s.Settings["OFFPATH_TOKEN_METRICS_FILE"])
	fmt.Fprintf(w, "\n  Keys and URLs for curl and the CLI (local use only): source %s\n", filepath.Join(s.State, "env"))
	for _, v := range env {
		switch v.name {
		case "CONTOSO_KEY", "FABRIKAM_KEY", "SUPPORT_KEY", "OFFPATH_ADMIN_KEY":
			fmt.Fprintf(w, "    %-18s %s\n", v.name, v.value)
		}
	}
	fmt.Fprintf(w, "\n  Try:\n")
	fmt.Fprintf(w, "    source %s\n", filepath.Join(s.State, "env"))
	fmt.Fprintf(w, "    curl -s -H \"x-functions-key: $OFFPATH_FUNCTION_KEY\" -H \"Authorization: Bearer $CONTOSO_KEY\" \"$OFFPATH_URL/api/v1/usage\"\n")
	fmt.Fprintf(w, "    go run ./cmd/offpath batches list        # the CLI reads OFFPATH_URL, OFFPATH_API_KEY, OFFPATH_STORAGE\n")
}
