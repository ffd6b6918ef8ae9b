package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
)

// The documents commands read statuses and reprocess through the REST API,
// so an operator needs no storage credential: a tenant's key reads its own
// documents; with -admin (the admin key) any tenant's, and reprocess puts a
// dead-lettered document back on the queue path.
func (c *cli) documents(ctx context.Context, args []string) error {
	return c.group("documents", args, map[string]func([]string) error{
		"status":    func(a []string) error { return c.documentStatus(ctx, a) },
		"list":      func(a []string) error { return c.listDocuments(ctx, a) },
		"reprocess": func(a []string) error { return c.reprocess(ctx, a) },
	}, "status, list, reprocess")
}

// connection is how the CLI reaches Table Storage (see stores).
func (c *cli) connection() (tablestore.Connection, error) {
	conn := tablestore.Connection{ConnectionString: c.storage, ServiceURL: c.url}
	if conn.ConnectionString == "" && conn.ServiceURL == "" {
		conn.ConnectionString = c.getenv("OFFPATH_STORAGE")
		if conn.ConnectionString == "" {
			conn.ConnectionString = c.getenv("AzureWebJobsStorage")
		}
	}
	switch {
	case conn.ConnectionString == "" && conn.ServiceURL == "":
		return conn, usagef("no storage: pass -storage CONNECTION-STRING or -table-url URL (or set OFFPATH_STORAGE)")
	case conn.ConnectionString == "":
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return conn, fmt.Errorf("Azure credential: %w", err)
		}
		conn.Credential = cred
	}
	return conn, nil
}

// documentFlags are the API flags and -admin.
func documentFlags(fs *flag.FlagSet) apiFlags {
	f := addAPIFlags(fs)
	f.admin = fs.Bool("admin", false, "any tenant's documents, with the admin key (-key, default $OFFPATH_ADMIN_KEY)")
	return f
}

// documentsBase is the API's documents path for the caller.
func documentsBase(f apiFlags) string {
	if f.isAdmin() {
		return "/api/v1/admin/documents"
	}
	return "/api/v1/documents"
}

// checkDocumentName refuses, as a usage error, a name that is not
// TENANT/PATH (unless tenant names the partition, as _unattributed does).
func checkDocumentName(fs *flag.FlagSet, name, tenantID string) error {
	if tenantID != "" {
		return nil
	}
	if _, _, err := claimcheck.SplitTenant(name); err != nil {
		return usagef("%s %q: want TENANT/PATH, the blob's name in the incoming container", fs.Name(), name)
	}
	return nil
}

// tenantFlag checks -tenant: the admin's only, a tenant id or _unattributed.
func tenantFlag(fs *flag.FlagSet, f apiFlags, tenantID string) error {
	switch {
	case tenantID == "":
		return nil
	case !f.isAdmin():
		return usagef("%s -tenant: only with -admin (a tenant's key reads its own documents)", fs.Name())
	case tenantID == document.Unattributed:
		return nil
	}
	if err := tenant.ValidateID(tenantID); err != nil {
		return usageError{fmt.Errorf("%s -tenant: %w", fs.Name(), err)}
	}
	return nil
}

func (c *cli) documentStatus(ctx context.Context, args []string) error {
	fs := c.flags("documents status", "TENANT/PATH [-admin [-tenant "+document.Unattributed+"]]",
		"What became of a document of the queue path: state, reason, version, deliveries, timings, chunks, result and usage.")
	f := documentFlags(fs)
	tenantID := fs.String("tenant", "", "with -admin: the status's partition when it is not the name's first segment ("+document.Unattributed+")")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	name, err := one(fs, pos, "document (TENANT/PATH)")
	if err != nil {
		return err
	}
	if err := tenantFlag(fs, f, *tenantID); err != nil {
		return err
	}
	if err := checkDocumentName(fs, name, *tenantID); err != nil {
		return err
	}
	client, err := c.client(f)
	if err != nil {
		return err
	}
	q := url.Values{"name": {name}}
	if *tenantID != "" {
		q.Set("tenant", *tenantID)
	}
	var st document.Status
	raw, err := client.call(ctx, http.MethodGet, documentsBase(f)+"/status?"+q.Encode(), nil, &st)
	if err != nil {
		return err
	}
	if *f.asJSON {
		return c.printRaw(raw)
	}
	printStatus(c.out, st)
	return nil
}

func printStatus(w io.Writer, st document.Status) {
	g := &grid{right: []bool{false, false}}
	add := func(k, v string) {
		if v != "" {
			g.add(k, v)
		}
	}
	when := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	add("document", st.Name)
	add("state", string(st.State))
	add("reason", st.Reason)
	add("version", st.ETag)
	add("size", fmt.Sprintf("%d bytes", st.Size))
	add("content type", st.ContentType)
	add("alias", st.Alias)
	add("correlation id", st.CorrelationID)
	add("correlation note", st.CorrelationNote)
	add("queue", st.Queue)
	if st.Deliveries > 0 {
		add("deliveries", fmt.Sprint(st.Deliveries))
	}
	add("enqueued", when(st.Enqueued))
	add("started", when(st.Started))
	add("finished", when(st.Finished))
	if d := st.Duration(); d > 0 {
		add("took", d.Round(time.Millisecond).String())
	}
	if st.Chunks > 0 {
		add("chunks", fmt.Sprintf("%d (%d bytes of text)", st.Chunks, st.TextBytes))
	}
	add("result", st.Result)
	u, c := st.Usage, st.Calls
	if u.Requests > 0 || u.PromptTokens > 0 {
		add("usage", fmt.Sprintf("%d prompt + %d completion tokens in %d model calls (%d attempts, %d throttled, %v waited)",
			u.PromptTokens, u.CompletionTokens, u.Requests, c.Attempts, c.Throttled, c.Waited))
	}
	add("updated", when(st.Updated))
	_ = g.write(w)
}

func (c *cli) listDocuments(ctx context.Context, args []string) error {
	fs := c.flags("documents list", "[-state S] [-limit N] [-cursor C] [-admin [-tenant T]]",
		"Documents and their statuses, a page at a time: the tenant's, or with -admin every tenant's (-tenant T: one tenant's, \""+document.Unattributed+"\" for claim checks and uploads that named none).")
	f := documentFlags(fs)
	state := fs.String("state", "", "only documents in this state ("+stateNames()+")")
	limit := fs.Int("limit", 50, "at most this many (1 to 500)")
	cursor := fs.String("cursor", "", "the next page: the cursor a previous list printed")
	tenantID := fs.String("tenant", "", "with -admin: only this tenant's documents")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if err := none(fs, pos, " (with -admin, -tenant T names a tenant)"); err != nil {
		return err
	}
	if err := tenantFlag(fs, f, *tenantID); err != nil {
		return err
	}
	if *state != "" {
		if _, err := document.ParseState(*state); err != nil {
			return usageError{fmt.Errorf("documents list -state: %w", err)}
		}
	}
	if *limit < 1 || *limit > 500 {
		return usagef("documents list -limit %d: want 1 to 500", *limit)
	}
	client, err := c.client(f)
	if err != nil {
		return err
	}
	q := url.Values{"limit": {fmt.Sprint(*limit)}}
	for k, v := range map[string]string{"state": *state, "cursor": *cursor, "tenant": *tenantID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var page struct {
		Data       []document.Status `json:"data"`
		NextCursor string            `json:"next_cursor"`
	}
	raw, err := client.call(ctx, http.MethodGet, documentsBase(f)+"?"+q.Encode(), nil, &page)
	if err != nil {
		return err
	}
	if *f.asJSON {
		return c.printRaw(raw)
	}
	if len(page.Data) == 0 {
		what := "documents"
		if *state != "" {
			what = *state + " documents"
		}
		_, err := fmt.Fprintf(c.out, "no %s\n", what)
		return err
	}
	g := &grid{right: []bool{false, false, true, true, false, false}}
	g.add("STATE", "UPDATED", "CHUNKS", "TOKENS", "DOCUMENT", "REASON")
	for _, st := range page.Data {
		g.add(string(st.State), st.Updated.UTC().Format(time.RFC3339), fmt.Sprint(st.Chunks),
			fmt.Sprint(st.Usage.PromptTokens+st.Usage.CompletionTokens), st.Name, st.Reason)
	}
	if err := g.write(c.out); err != nil {
		return err
	}
	if page.NextCursor != "" {
		_, err = fmt.Fprintf(c.out, "more: -cursor %s\n", page.NextCursor)
	}
	return err
}

// stateNames lists the document states.
func stateNames() string {
	names := make([]string, len(document.States))
	for i, st := range document.States {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}

// reprocess puts a dead-lettered document back on the queue path through
// the admin's route: offpath writes its blob again from the dead-lettered
// version, so the blob trigger enqueues it as a new upload (a message moved
// back from the dead-letter queue would be ignored, a redelivery of a
// version that is final).
func (c *cli) reprocess(ctx context.Context, args []string) error {
	fs := c.flags("documents reprocess", "TENANT/PATH",
		"Put a dead-lettered document back on the queue path, with the admin key: its blob is written again from the dead-lettered version and enqueued as a new upload.")
	f := addAPIFlags(fs)
	admin := true
	f.admin = &admin
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	name, err := one(fs, pos, "document (TENANT/PATH)")
	if err != nil {
		return err
	}
	if err := checkDocumentName(fs, name, ""); err != nil {
		return err
	}
	client, err := c.client(f)
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]string{"name": name})
	if err != nil {
		return err
	}
	var st document.Status
	raw, err := client.call(ctx, http.MethodPost, "/api/v1/admin/documents/reprocess", body, &st)
	if err != nil {
		return err
	}
	if *f.asJSON {
		return c.printRaw(raw)
	}
	_, err = fmt.Fprintf(c.out, "%s: %s again as version %s (written anew from the dead-lettered version; the blob trigger enqueues it)\n", st.Name, st.State, st.ETag)
	return err
}
