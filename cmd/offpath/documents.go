package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/docblob"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
)

func (c *cli) documents(ctx context.Context, args []string) error {
	return c.group("documents", args, map[string]func([]string) error{
		"status":    func(a []string) error { return c.documentStatus(ctx, a) },
		"list":      func(a []string) error { return c.listDocuments(ctx, a) },
		"reprocess": func(a []string) error { return c.reprocess(ctx, a) },
	}, "status, list, reprocess")
}

// documentStore connects to the document statuses.
func (c *cli) documentStore() (*tablestore.Documents, error) {
	conn, err := c.connection()
	if err != nil {
		return nil, err
	}
	svc, err := tablestore.NewServiceClient(conn)
	if err != nil {
		return nil, err
	}
	return tablestore.NewDocuments(svc, "", nil), nil
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

// documentStates are the states documents list -state accepts.
var documentStates = strings.Join([]string{string(document.Queued), string(document.Processing), string(document.Retrying),
	string(document.Done), string(document.Refused), string(document.Rejected)}, ", ")

// documentName splits "tenant/path" into the status partition and name.
func documentName(arg string) (partition, name string, err error) {
	tenantID, _, err := claimcheck.SplitTenant(arg)
	if err != nil {
		return "", "", usagef("%q: want TENANT/PATH, the blob's name in the incoming container", arg)
	}
	return tenantID, arg, nil
}

func (c *cli) documentStatus(ctx context.Context, args []string) error {
	fs := c.flags("documents status", "TENANT/PATH [-json]",
		"What became of a document of the queue path: state, reason, version, deliveries, timings, chunks, result and usage.")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	arg, err := one(fs, pos, "document (TENANT/PATH)")
	if err != nil {
		return err
	}
	partition, name, err := documentName(arg)
	if err != nil {
		return err
	}
	docs, err := c.documentStore()
	if err != nil {
		return err
	}
	st, err := docs.Get(ctx, partition, name)
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(st)
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
	u := st.Usage
	if u.Requests > 0 || u.PromptTokens > 0 {
		add("usage", fmt.Sprintf("%d prompt + %d completion tokens in %d model calls (%d attempts, %d throttled, %v waited)",
			u.PromptTokens, u.CompletionTokens, u.Requests, u.Attempts, u.Throttled, time.Duration(u.WaitedMS)*time.Millisecond))
	}
	add("updated", when(st.Updated))
	_ = g.write(w)
}

func (c *cli) listDocuments(ctx context.Context, args []string) error {
	fs := c.flags("documents list", "TENANT [-state S] [-limit N] [-json]",
		"A tenant's documents (\""+document.Unattributed+"\": claim checks and uploads that named no tenant).")
	state := fs.String("state", "", "only documents in this state ("+documentStates+")")
	limit := fs.Int("limit", 100, "at most this many")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	partition, err := one(fs, pos, "tenant id (or "+document.Unattributed+")")
	if err != nil {
		return err
	}
	if partition != document.Unattributed {
		if err := tenant.ValidateID(partition); err != nil {
			return usageError{fmt.Errorf("documents list: %w", err)}
		}
	}
	if *state != "" && !strings.Contains(", "+documentStates+", ", ", "+*state+", ") {
		return usagef("documents list -state %q: want one of %s", *state, documentStates)
	}
	if *limit <= 0 {
		return usagef("documents list -limit %d: want 1 or more", *limit)
	}
	docs, err := c.documentStore()
	if err != nil {
		return err
	}
	all, err := docs.List(ctx, partition, 1000)
	if err != nil {
		return err
	}
	var out []document.Status
	for _, st := range all {
		if (*state == "" || string(st.State) == *state) && len(out) < *limit {
			out = append(out, st)
		}
	}
	if *asJSON {
		if out == nil {
			out = []document.Status{}
		}
		return c.printJSON(out)
	}
	if len(out) == 0 {
		what := "documents"
		if *state != "" {
			what = *state + " documents"
		}
		_, err := fmt.Fprintf(c.out, "no %s for %s\n", what, partition)
		return err
	}
	g := &grid{right: []bool{false, false, true, true, false, false}}
	g.add("STATE", "UPDATED", "CHUNKS", "TOKENS", "DOCUMENT", "REASON")
	for _, st := range out {
		g.add(string(st.State), st.Updated.UTC().Format(time.RFC3339), fmt.Sprint(st.Chunks),
			fmt.Sprint(st.Usage.PromptTokens+st.Usage.CompletionTokens), st.Name, st.Reason)
	}
	return g.write(c.out)
}

// reprocess re-enqueues a document after a fix: it runs the enqueue
// function's checks again on the blob as it is now, resets the status, and
// sends the claim check to the queue.
func (c *cli) reprocess(ctx context.Context, args []string) error {
	fs := c.flags("documents reprocess", "TENANT/PATH (-servicebus NS | -devhost URL) [-force]",
		"Re-enqueue a rejected or dead-lettered document after a fix: the enqueue checks run again on the blob as it is now.")
	force := fs.Bool("force", false, "reprocess a document that is done or refused too")
	blobURL := fs.String("blob-url", "", "blob service URL (with DefaultAzureCredential; default: from -storage)")
	namespace := fs.String("servicebus", "", "Service Bus namespace, <name>.servicebus.windows.net (DefaultAzureCredential)")
	devhostURL := fs.String("devhost", "", "send through a local dev host instead, e.g. http://127.0.0.1:7071")
	masterKey := fs.String("master-key", "", "the dev host's master key (default $DEVHOST_MASTER_KEY, else local-master-key)")
	alias := fs.String("alias", "ingest", "the ingestion alias (OFFPATH_INGEST_ALIAS)")
	maxBytes := fs.Int64("max-bytes", claimcheck.DefaultMaxDocument, "the largest document (OFFPATH_INGEST_MAX_BYTES)")
	heavyBytes := fs.Int64("heavy-bytes", claimcheck.DefaultHeavyThreshold, "size from which documents go to the heavy queue (OFFPATH_INGEST_HEAVY_BYTES)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	arg, err := one(fs, pos, "document (TENANT/PATH)")
	if err != nil {
		return err
	}
	partition, name, err := documentName(arg)
	if err != nil {
		return err
	}
	var send sender
	switch {
	case (*namespace == "") == (*devhostURL == ""):
		return usagef("documents reprocess: missing -servicebus NAMESPACE, or -devhost URL for a local dev host (one of them)")
	case *devhostURL != "":
		key := *masterKey
		if key == "" {
			key = cmpOr(c.getenv("DEVHOST_MASTER_KEY"), "local-master-key")
		}
		send = devhostSender{base: strings.TrimRight(*devhostURL, "/"), key: key}
	default:
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return fmt.Errorf("Azure credential: %w", err)
		}
		send = serviceBusSender{namespace: *namespace, cred: cred}
	}

	docs, err := c.documentStore()
	if err != nil {
		return err
	}
	st, err := docs.Get(ctx, partition, name)
	switch {
	case errors.Is(err, document.ErrNotFound):
		// Never seen (the trigger never fired for it): enqueue it now.
	case err != nil:
		return err
	case (st.State == document.Done || st.State == document.Refused) && !*force:
		return fmt.Errorf("%s is %s (version %s); pass -force to process it again", name, st.State, st.ETag)
	}
	blobs, err := c.blobClient(*blobURL)
	if err != nil {
		return err
	}
	store := docblob.New(blobs, claimcheck.DefaultContainer, ingest.DefaultResultsContainer, 0)
	rules, err := claimcheck.NewRules(claimcheck.Policy{AccountURL: store.AccountURL(), MaxDocumentBytes: *maxBytes, HeavyThreshold: *heavyBytes})
	if err != nil {
		return err
	}
	cat, err := c.catalog()
	if err != nil {
		return err
	}
	tenants, _, err := c.stores()
	if err != nil {
		return err
	}
	enq, err := ingest.NewEnqueuer(ingest.Options{Rules: rules, Catalog: cat, Alias: *alias, Tenants: tenants, Statuses: docs, Blobs: ingest.BlobStore(store)})
	if err != nil {
		return err
	}
	claim, err := enq.Enqueue(zerolog.Nop().WithContext(ctx), name, true)
	if err != nil {
		return fmt.Errorf("%s is still not acceptable: %w", name, err)
	}
	if err := send.send(ctx, claim.Queue, claim.Body, claim.Message.CorrelationID); err != nil {
		return fmt.Errorf("send the claim check to %s: %w (the status says queued; run reprocess again)", claim.Queue, err)
	}
	fmt.Fprintf(c.out, "%s (version %s) re-enqueued to %s, correlation id %s\n", name, claim.Message.ETag, claim.Queue, claim.Message.CorrelationID)
	return nil
}

// blobClient reaches the documents: -blob-url with DefaultAzureCredential,
// or the storage connection string.
func (c *cli) blobClient(blobURL string) (*azblob.Client, error) {
	if blobURL != "" {
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return nil, fmt.Errorf("Azure credential: %w", err)
		}
		return azblob.NewClient(blobURL, cred, nil)
	}
	conn, err := c.connection()
	if err != nil {
		return nil, err
	}
	if conn.ConnectionString == "" {
		return nil, usagef("with -table-url, pass -blob-url too")
	}
	b, err := azblob.NewClientFromConnectionString(tablestore.ExpandDevelopmentStorage(conn.ConnectionString), nil)
	if err != nil {
		return nil, errors.New("blob client: the storage connection string is malformed")
	}
	return b, nil
}

// sender puts a message on a Service Bus queue.
type sender interface {
	send(ctx context.Context, queue string, body []byte, correlationID string) error
}

// serviceBusSender sends with Service Bus's REST API and an Entra ID token
// (the role Azure Service Bus Data Sender on the queue).
type serviceBusSender struct {
	namespace string
	cred      azcore.TokenCredential
	client    *http.Client
}

func (s serviceBusSender) send(ctx context.Context, queue string, body []byte, correlationID string) error {
	tok, err := s.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{"https://servicebus.azure.net/.default"}})
	if err != nil {
		return fmt.Errorf("token for Service Bus: %w", err)
	}
	base := s.namespace
	if !strings.Contains(base, "://") {
		base = "https://" + base
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/"+url.PathEscape(queue)+"/messages", bytes.NewReader(body))
	if err != nil {
		return err
	}
	props, _ := json.Marshal(map[string]string{"CorrelationId": correlationID})
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	// A header is ASCII; a correlation id is text in any script: escape
	// the rest as JSON does, \uXXXX.
	props = asciiJSON(props)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("BrokerProperties", string(props))
	client := s.client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return fmt.Errorf("Service Bus answered %d: %s", res.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}

// asciiJSON rewrites every non-ASCII character of the JSON text b as a
// \uXXXX escape (a surrogate pair beyond the Basic Multilingual Plane),
// which decodes to the same value.
func asciiJSON(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, r := range string(b) {
		if r < utf8.RuneSelf {
			out = append(out, byte(r))
			continue
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
	}
	return out
}

// devhostSender sends through the dev host's Service Bus stand-in.
type devhostSender struct {
	base, key string
}

func (s devhostSender) send(ctx context.Context, queue string, body []byte, correlationID string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/devhost/servicebus/"+url.PathEscape(queue), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("x-functions-key", s.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Correlation-Id", correlationID)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return fmt.Errorf("the dev host answered %d: %s", res.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
