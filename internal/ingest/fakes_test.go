package ingest_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/memstore"
)

// In-memory stand-ins for the stores, so the flow's rules are tested
// fast; the end-to-end tests run the same code against Azurite through the
// dev host.

type memTenants struct {
	mu sync.Mutex
	m  map[string]tenant.Tenant
}

func (s *memTenants) Get(_ context.Context, id string) (tenant.Tenant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.m[id]
	if !ok {
		return tenant.Tenant{}, tenant.ErrNotFound
	}
	return t, nil
}

// memStatuses is an in-memory Statuses, held to tablestore's Documents by
// the contract suite in statuses_test.go.
type memStatuses struct {
	mu      sync.Mutex
	m       map[string]document.Status // partition + "\x00" + name
	version int
	now     func() time.Time // stamps Updated (nil: time.Now)
}

func (s *memStatuses) key(partition, name string) string { return partition + "\x00" + name }

func (s *memStatuses) Get(_ context.Context, partition, name string) (document.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get(partition, name)
}

func (s *memStatuses) get(partition, name string) (document.Status, error) {
	st, ok := s.m[s.key(partition, name)]
	if !ok {
		return document.Status{}, document.ErrNotFound
	}
	return st, nil
}

func (s *memStatuses) Put(_ context.Context, name string, st document.Status) (document.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.put(name, st), nil
}

func (s *memStatuses) put(name string, st document.Status) document.Status {
	s.version++
	st.Version = fmt.Sprint(s.version)
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	st.Updated = now().UTC()
	if s.m == nil {
		s.m = map[string]document.Status{}
	}
	partition := cmp.Or(st.Tenant, document.Unattributed)
	s.m[s.key(partition, name)] = st
	return st
}

// Update reads, changes and writes the status as one step, as the
// table's conditional write (retried on a conflict) makes it.
func (s *memStatuses) Update(_ context.Context, partition, name string, change func(*document.Status, bool) (bool, error)) (document.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.get(partition, name)
	found := err == nil
	write, err := change(&st, found)
	if err != nil || !write {
		return st, err
	}
	if cmp.Or(st.Tenant, document.Unattributed) != partition {
		return document.Status{}, fmt.Errorf("update document status: partition %q, status of tenant %q", partition, st.Tenant)
	}
	return s.put(name, st), nil
}

func (s *memStatuses) all() []document.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.m))
}

// memLedger is memstore's ledger (held to tablestore's by its contract
// suite), counting the RecordBatch calls.
type memLedger struct {
	*memstore.Ledger
	mu      sync.Mutex
	batches int
}

func (l *memLedger) RecordBatch(ctx context.Context, entries []ledger.Entry) error {
	l.mu.Lock()
	l.batches++
	l.mu.Unlock()
	return l.Ledger.RecordBatch(ctx, entries)
}

func (l *memLedger) entries() []ledger.Entry { return l.Entries() }

type memBlob struct {
	data        []byte
	etag        string
	size        int64 // len(data), or a size declared by putSized
	contentType string
	meta        map[string]string
}

func (b memBlob) info() object.Info {
	return object.Info{ETag: b.etag, Size: b.size, ContentType: b.contentType, Metadata: b.meta}
}

// memBlobs is an in-memory Blobs, held to blobstore's Documents by the
// contract suite in blobs_test.go.
type memBlobs struct {
	mu       sync.Mutex
	incoming map[string]memBlob
	results  map[string]memBlob
	seq      int
}

func newMemBlobs() *memBlobs {
	return &memBlobs{incoming: map[string]memBlob{}, results: map[string]memBlob{}}
}

// put stores a document and returns its ETag.
func (b *memBlobs) put(name string, data []byte) string {
	return b.store(name, memBlob{data: data, size: int64(len(data))})
}

// putSized stores a document of size bytes whose content is never read.
func (b *memBlobs) putSized(name string, size int64, meta map[string]string) string {
	return b.store(name, memBlob{size: size, meta: meta})
}

// store uploads a document as its uploader would and returns its ETag.
func (b *memBlobs) store(name string, blob memBlob) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.storeLocked(name, blob)
}

// storeLocked writes a new version of the document name, as the service
// does: a new ETag, application/octet-stream when no content type is
// given, metadata keys read lower case. b.mu is held.
func (b *memBlobs) storeLocked(name string, blob memBlob) string {
	b.seq++
	blob.etag = fmt.Sprintf("0x8D%012d", b.seq)
	blob.contentType = cmp.Or(blob.contentType, "application/octet-stream")
	meta := make(map[string]string, len(blob.meta))
	for k, v := range blob.meta {
		meta[strings.ToLower(k)] = v
	}
	blob.meta = meta
	b.incoming[name] = blob
	return blob.etag
}

func (b *memBlobs) remove(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.incoming, name)
}

func (b *memBlobs) Stat(_ context.Context, name string) (object.Info, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	blob, ok := b.incoming[name]
	if !ok {
		return object.Info{}, fmt.Errorf("read %s: %w", name, object.ErrNotFound)
	}
	return blob.info(), nil
}

// pinned returns the document name at version etag. b.mu is held.
func (b *memBlobs) pinned(name, etag string) (memBlob, error) {
	blob, ok := b.incoming[name]
	switch {
	case !ok:
		return memBlob{}, fmt.Errorf("read %s: %w", name, object.ErrNotFound)
	case blob.etag != strings.Trim(etag, `"`):
		return memBlob{}, fmt.Errorf("read %s: %w", name, object.ErrChanged)
	}
	return blob, nil
}

func (b *memBlobs) Open(_ context.Context, name, etag string) (io.ReadCloser, object.Info, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	blob, err := b.pinned(name, etag)
	if err != nil {
		return nil, object.Info{}, err
	}
	return io.NopCloser(bytes.NewReader(blob.data)), blob.info(), nil
}

// Redrop checks the version and writes the new one as one step, as the
// service's conditional commit does.
func (b *memBlobs) Redrop(_ context.Context, name, etag string) (object.Info, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	blob, err := b.pinned(name, etag)
	if err != nil {
		return object.Info{}, err
	}
	b.storeLocked(name, blob)
	return b.incoming[name].info(), nil
}

func (b *memBlobs) NewResult(name string) ingest.ResultWriter { return &memWriter{b: b, name: name} }

func (b *memBlobs) DeleteResult(_ context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.results, name)
	return nil
}

// read returns the result name as blobstore's Documents.Read does.
func (b *memBlobs) read(name string) ([]byte, object.Info, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.results[name]
	if !ok {
		return nil, object.Info{}, fmt.Errorf("read result %s: %w", name, object.ErrNotFound)
	}
	return r.data, r.info(), nil
}

// result returns the result name's bytes and metadata, if there is one.
func (b *memBlobs) result(name string) ([]byte, map[string]string, bool) {
	r, p, err := b.read(name)
	return r, p.Metadata, err == nil
}

type memWriter struct {
	b    *memBlobs
	name string
	buf  bytes.Buffer
}

func (w *memWriter) Write(_ context.Context, p []byte) error { w.buf.Write(p); return nil }

func (w *memWriter) Commit(_ context.Context, head []byte, contentType string, md map[string]string) error {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	data := append(slices.Clone(head), w.buf.Bytes()...)
	w.b.results[w.name] = memBlob{data: data, size: int64(len(data)), contentType: contentType, meta: maps.Clone(md)}
	return nil
}

// fixture is a flow wired to fakes and a simulator.
type fixture struct {
	sim      *aoaisim.Server
	blobs    *memBlobs
	tenants  *memTenants
	statuses *memStatuses
	ledger   *memLedger
	rules    *claimcheck.Rules
	enq      *ingest.Enqueuer
	proc     *ingest.Processor
}

const accountURL = "http://127.0.0.1:10000/devstoreaccount1"

func testCatalog(tb testing.TB) *catalog.Catalog {
	tb.Helper()
	cat, err := catalog.Parse([]byte(`{"version":1,"aliases":{
		"ingest":{"queue":{"deployment":"gpt-4o-mini","price":{"input_per_1m":0.15,"cached_input_per_1m":0.075,"output_per_1m":0.6}},
		          "embedding":{"deployment":"text-embedding-3-small","price":{"input_per_1m":0.02,"cached_input_per_1m":0,"output_per_1m":0}}},
		"summarize":{"queue":{"deployment":"gpt-4o-mini","price":{"input_per_1m":0.15,"cached_input_per_1m":0.075,"output_per_1m":0.6}}}}}`))
	if err != nil {
		tb.Fatal(err)
	}
	return cat
}

// testDeployments are the simulator's deployments: small vectors keep the
// tests fast; the benchmarks use the real 1,536.
func testDeployments(dims int) []aoaisim.Deployment {
	return []aoaisim.Deployment{
		{Name: "gpt-4o-mini", Model: "gpt-4o-mini", ModelVersion: "2024-07-18"},
		{Name: "text-embedding-3-small", Model: "text-embedding-3-small", Dimensions: dims},
	}
}

type fixtureOptions struct {
	sim     func(*aoaisim.Config)
	llm     func(*azopenai.QueueConfig)
	ingest  func(*ingest.Options)
	limiter azopenai.Limiter
	models  func(ingest.Models) ingest.Models // wraps the simulator's client
}

func newFixture(tb testing.TB, fo fixtureOptions) *fixture {
	tb.Helper()
	cfg := aoaisim.Config{Deployments: testDeployments(16), DisableRateLimits: true}
	if fo.sim != nil {
		fo.sim(&cfg)
	}
	sim, err := aoaisim.New(cfg, zerolog.Nop())
	if err != nil {
		tb.Fatal(err)
	}
	url, err := sim.Start("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = sim.Close() })
	lc := azopenai.QueueConfig{Endpoint: url, APIKey: aoaisim.DefaultKey, AllowHTTP: true, BaseBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MinAttemptTime: time.Millisecond}
	if fo.llm != nil {
		fo.llm(&lc)
	}
	client, err := azopenai.NewQueueClient(lc, fo.limiter, zerolog.Nop())
	if err != nil {
		tb.Fatal(err)
	}
	rules, err := claimcheck.NewRules(claimcheck.Policy{AccountURL: accountURL, MaxDocumentBytes: 64 << 20, HeavyThreshold: 1 << 20})
	if err != nil {
		tb.Fatal(err)
	}
	f := &fixture{sim: sim, blobs: newMemBlobs(), statuses: &memStatuses{}, ledger: &memLedger{Ledger: memstore.NewLedger(nil)}, rules: rules,
		tenants: &memTenants{m: map[string]tenant.Tenant{
			"acme":  {ID: "acme", State: tenant.Active, Aliases: []string{"ingest"}},
			"other": {ID: "other", State: tenant.Active, Aliases: []string{"ingest"}},
			"sleep": {ID: "sleep", State: tenant.Suspended, Aliases: []string{"ingest"}},
			"nope":  {ID: "nope", State: tenant.Active, Aliases: []string{"summarize"}},
		}}}
	o := ingest.Options{Rules: rules, Catalog: testCatalog(tb), Tenants: f.tenants, Statuses: f.statuses,
		Ledger: f.ledger, Models: client, Blobs: f.blobs}
	if fo.models != nil {
		o.Models = fo.models(client)
	}
	if fo.ingest != nil {
		fo.ingest(&o)
	}
	if f.enq, err = ingest.NewEnqueuer(o); err != nil {
		tb.Fatal(err)
	}
	if f.proc, err = ingest.NewProcessor(o); err != nil {
		tb.Fatal(err)
	}
	return f
}

// drop uploads a document and enqueues it, returning the claim.
func (f *fixture) drop(tb testing.TB, name string, data []byte) ingest.Claim {
	tb.Helper()
	etag := f.blobs.put(name, data)
	claim, err := f.enq.Enqueue(context.Background(), name, false)
	if err != nil || claim.Message.ETag != etag {
		tb.Fatalf("Enqueue(%q) = %+v, %v; want version %s", name, claim.Message, err, etag)
	}
	return claim
}

// deliver hands the claim check to Process as delivery count of its one
// message: a redelivery keeps the message's id, as Service Bus does.
func (f *fixture) deliver(body []byte, count int) (document.Status, error) {
	sum := sha256.Sum256(body)
	return f.deliverAs(body, hex.EncodeToString(sum[:16]), count)
}

// deliverAs hands the claim check to Process as message id's delivery
// count: another id is another message carrying the same claim check.
func (f *fixture) deliverAs(body []byte, id string, count int) (document.Status, error) {
	return f.proc.Process(context.Background(), ingest.Delivery{Body: body, MessageID: id, DeliveryCount: count,
		EnqueuedTime: time.Now(), Queue: "doc-ingest"})
}

func (f *fixture) simStats(name string) aoaisim.DeploymentStats {
	for _, d := range f.sim.Stats().Deployments {
		if d.Name == name {
			return d
		}
	}
	return aoaisim.DeploymentStats{}
}

// prose is n bytes of plain sentences.
func prose(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "Sentence %d tells of stores, shelves and the people who stock them. ", i)
		if i%7 == 6 {
			b.WriteString("\n\n")
		}
	}
	return b.Bytes()[:n]
}
