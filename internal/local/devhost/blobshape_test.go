package devhost

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/invoke"
)

var update = flag.Bool("update", false, "rewrite the golden envelopes in testdata")

// sampleBlob is a block blob as Get Blob Properties reports it after a
// Put Blob of content with metadata: what the extension binds.
func sampleBlob(content []byte) blobState {
	sum := md5.Sum(content)
	return blobState{
		ETag: `"0x8DD5A1B2C3D4E5F"`, BlobType: "BlockBlob", ContentLength: int64(len(content)),
		ContentType: "text/markdown", ContentMD5: sum[:],
		CreatedOn: time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC), LastModified: time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC),
		AccessTier: "Hot", AccessTierInferred: true, LeaseState: "available", LeaseStatus: "unlocked",
		AcceptRanges: "bytes", IsServerEncrypted: true,
		Metadata: map[string]string{"correlation_id": "Zürich–Δ-0042"},
	}
}

func sampleInvocation(ext StorageExtension, deferred bool) blobInvocation {
	content := []byte("# Returns\n\nWithin 30 days.\n")
	return blobInvocation{
		function: "ingest-enqueue", extension: ext, deferred: deferred,
		trigger:   Binding{Type: "blobTrigger", Name: "blob", Path: "incoming/{name}", Connection: "AzureWebJobsStorage", DataType: "binary"},
		container: "incoming", name: "acme/kb/returns policy.md",
		url:    "http://127.0.0.1:10000/devstoreaccount1/incoming/acme/kb/returns%20policy.md",
		tokens: map[string]string{"name": "acme/kb/returns policy.md"}, state: sampleBlob(content), content: content,
	}
}

// encodeGolden is the envelope as the host posts it, with a fixed sys.
func encodeGolden(t *testing.T, inv blobInvocation) []byte {
	t.Helper()
	env := inv.envelope(time.Date(2025, 3, 1, 8, 0, 2, 500000000, time.UTC))
	env.Metadata["sys"] = mustJSON(object{{"MethodName", inv.function}, {"UtcNow", "2025-03-01T08:00:02.5Z"}, {"RandGuid", "0a1b2c3d-0000-4000-8000-000000000003"}})
	body, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		t.Fatal(err)
	}
	return append(out.Bytes(), '\n')
}

// TestBlobEnvelope_Golden pins each shape's envelope to a file in
// testdata/envelopes (go test -run Golden -update rewrites them).
func TestBlobEnvelope_Golden(t *testing.T) {
	t.Parallel()
	for file, inv := range map[string]blobInvocation{
		"blob-5x-binary.json":   sampleInvocation(StorageExtension5, false),
		"blob-5x-deferred.json": sampleInvocation(StorageExtension5, true),
		"blob-4x-binary.json":   sampleInvocation(StorageExtension4, false),
	} {
		got := encodeGolden(t, inv)
		path := filepath.Join("testdata", "envelopes", file)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to write it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what the dev host encodes now:\n%s", file, got)
		}
	}
}

// hostEnvelope is the envelope read the way the host's conventions say it
// was written: strings in Metadata are JSON text inside a JSON string,
// objects are plain JSON.
type hostEnvelope struct {
	Data     map[string]json.RawMessage
	Metadata map[string]json.RawMessage
}

func readGolden(t *testing.T, file string) hostEnvelope {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "envelopes", file))
	if err != nil {
		t.Fatal(err)
	}
	var env hostEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return env
}

// doubleEncoded decodes a .NET string as the host sends it: a JSON string
// whose text is the JSON encoding of the value.
func doubleEncoded(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var outer, inner string
	if err := json.Unmarshal(raw, &outer); err != nil {
		t.Fatalf("%s is not a JSON string: %v", raw, err)
	}
	if err := json.Unmarshal([]byte(outer), &inner); err != nil {
		t.Fatalf("%s is not double-encoded: %v", raw, err)
	}
	return inner
}

var dateTimeOffsetText = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,7})?[+-]\d\d:\d\d$`)

// TestBlobEnvelope_RoundTrip reads the golden envelopes back by the host's
// rules and the two SDKs' member lists, and finds what was put in: the
// content, the path token and Uri as double-encoded strings, every
// BlobProperties member of the shape with its .NET type, and the user
// metadata.
func TestBlobEnvelope_RoundTrip(t *testing.T) {
	t.Parallel()
	want := sampleInvocation(StorageExtension5, false)
	for _, tc := range []struct {
		file     string
		members  []string
		deferred bool
	}{
		{"blob-5x-binary.json", members5, false},
		{"blob-5x-deferred.json", members5, true},
		{"blob-4x-binary.json", members4, false},
	} {
		env := readGolden(t, tc.file)
		if got := doubleEncoded(t, env.Metadata["Uri"]); got != want.url {
			t.Errorf("%s: Uri = %q", tc.file, got)
		}
		if got := doubleEncoded(t, env.Metadata["name"]); got != want.name {
			t.Errorf("%s: name = %q", tc.file, got)
		}
		var meta map[string]string
		if err := json.Unmarshal(env.Metadata["Metadata"], &meta); err != nil || meta["correlation_id"] != "Zürich–Δ-0042" {
			t.Errorf("%s: Metadata = %s (%v)", tc.file, env.Metadata["Metadata"], err)
		}
		if tc.deferred {
			var d struct {
				Source, Version, ContentType string
				Content                      map[string]any
			}
			if err := json.Unmarshal(env.Data["blob"], &d); err != nil {
				t.Fatalf("%s: descriptor %s: %v", tc.file, env.Data["blob"], err)
			}
			content := `{"Connection":"AzureWebJobsStorage","ContainerName":"incoming","BlobName":"acme/kb/returns policy.md"}`
			if d.Source != "AzureStorageBlobs" || d.Version != "1.0" || d.ContentType != "application/json" ||
				d.Content["IsEmpty"] != false || d.Content["Length"] != float64(len(content)) || d.Content["MediaType"] != nil {
				t.Errorf("%s: descriptor %s", tc.file, env.Data["blob"])
			}
		} else {
			var b64 string
			if err := json.Unmarshal(env.Data["blob"], &b64); err != nil {
				t.Fatalf("%s: Data.blob: %v", tc.file, err)
			}
			if got, err := base64.StdEncoding.DecodeString(b64); err != nil || !bytes.Equal(got, want.content) {
				t.Errorf("%s: content %q (%v)", tc.file, got, err)
			}
		}

		var props map[string]json.RawMessage
		if err := json.Unmarshal(env.Metadata["Properties"], &props); err != nil {
			t.Fatalf("%s: Properties: %v", tc.file, err)
		}
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		if !sameSet(names, tc.members) {
			t.Errorf("%s: Properties members %v, want %v", tc.file, names, tc.members)
		}
		checkProperties(t, tc.file, props, want.state)
	}
}

// The public properties of Azure.Storage.Blobs.Models.BlobProperties and of
// Microsoft.Azure.Storage.Blob.BlobProperties (v11).
var (
	members5 = strings.Fields(`LastModified CreatedOn Metadata ObjectReplicationDestinationPolicyId
		ObjectReplicationSourceProperties BlobType CopyCompletedOn CopyStatusDescription CopyId CopyProgress
		CopySource CopyStatus BlobCopyStatus IsIncrementalCopy DestinationSnapshot LeaseDuration LeaseState
		LeaseStatus ContentLength ContentType ETag ContentHash ContentEncoding ContentDisposition
		ContentLanguage CacheControl BlobSequenceNumber AcceptRanges BlobCommittedBlockCount IsServerEncrypted
		EncryptionKeySha256 EncryptionScope AccessTier AccessTierInferred ArchiveStatus AccessTierChangedOn
		SmartAccessTier VersionId IsLatestVersion TagCount ExpiresOn IsSealed RehydratePriority LastAccessed
		ImmutabilityPolicy HasLegalHold`)
	members4 = strings.Fields(`CacheControl ContentDisposition ContentEncoding ContentLanguage Length
		ContentMD5 ContentType ETag Created LastModified BlobType LeaseStatus LeaseState LeaseDuration
		PageBlobSequenceNumber AppendBlobCommittedBlockCount IsServerEncrypted IsIncrementalCopy
		StandardBlobTier RehydrationStatus PremiumPageBlobTier BlobTierInferred BlobTierLastModifiedTime
		DeletedTime RemainingDaysBeforePermanentDelete`)
)

func sameSet(a, b []string) bool {
	x, y := map[string]bool{}, map[string]bool{}
	for _, s := range a {
		x[s] = true
	}
	for _, s := range b {
		y[s] = true
	}
	return reflect.DeepEqual(x, y)
}

// checkProperties reads the members offpath-like consumers care about by
// each shape's names and types.
func checkProperties(t *testing.T, file string, props map[string]json.RawMessage, want blobState) {
	t.Helper()
	str := func(k string) string {
		var s string
		if err := json.Unmarshal(props[k], &s); err != nil {
			t.Errorf("%s: %s = %s, want a string", file, k, props[k])
		}
		return s
	}
	num := func(k string) int64 {
		var n int64
		if err := json.Unmarshal(props[k], &n); err != nil {
			t.Errorf("%s: %s = %s, want a number", file, k, props[k])
		}
		return n
	}
	when := func(k string) time.Time {
		s := str(k)
		if !dateTimeOffsetText.MatchString(s) {
			t.Errorf("%s: %s = %q is not a DateTimeOffset as Newtonsoft writes it", file, k, s)
		}
		tm, _ := time.Parse("2006-01-02T15:04:05.9999999Z07:00", s)
		return tm
	}
	if strings.Contains(file, "5x") {
		if string(props["ETag"]) != "{}" {
			t.Errorf("%s: ETag = %s, want {} (Azure.ETag has no public members)", file, props["ETag"])
		}
		if n := num("ContentLength"); n != want.ContentLength {
			t.Errorf("%s: ContentLength = %d", file, n)
		}
		if h := str("ContentHash"); h != base64.StdEncoding.EncodeToString(want.ContentMD5) {
			t.Errorf("%s: ContentHash = %q", file, h)
		}
		if !when("CreatedOn").Equal(want.CreatedOn) || !when("LastModified").Equal(want.LastModified) {
			t.Errorf("%s: CreatedOn %s, LastModified %s", file, props["CreatedOn"], props["LastModified"])
		}
		for _, never := range []string{"LastAccessed", "ExpiresOn", "CopyCompletedOn", "AccessTierChangedOn"} {
			if s := str(never); s != "0001-01-01T00:00:00+00:00" {
				t.Errorf("%s: %s = %q, want DateTimeOffset.MinValue", file, never, s)
			}
		}
		// BlobType.Block, LeaseState.Available, LeaseStatus.Unlocked.
		if num("BlobType") != 0 || num("LeaseState") != 0 || num("LeaseStatus") != 1 || num("LeaseDuration") != 0 {
			t.Errorf("%s: enums BlobType %s LeaseState %s LeaseStatus %s", file, props["BlobType"], props["LeaseState"], props["LeaseStatus"])
		}
		if string(props["BlobCopyStatus"]) != "null" || num("CopyStatus") != 0 {
			t.Errorf("%s: BlobCopyStatus %s, CopyStatus %s: never copied is null, and Pending for the legacy member", file, props["BlobCopyStatus"], props["CopyStatus"])
		}
		return
	}
	if e := str("ETag"); e != want.ETag || !strings.HasPrefix(e, `"`) {
		t.Errorf("%s: ETag = %q, want the quoted %s", file, e, want.ETag)
	}
	if n := num("Length"); n != want.ContentLength {
		t.Errorf("%s: Length = %d", file, n)
	}
	if h := str("ContentMD5"); h != base64.StdEncoding.EncodeToString(want.ContentMD5) {
		t.Errorf("%s: ContentMD5 = %q", file, h)
	}
	if !when("Created").Equal(want.CreatedOn) || !when("LastModified").Equal(want.LastModified) {
		t.Errorf("%s: Created %s, LastModified %s", file, props["Created"], props["LastModified"])
	}
	// BlobType.BlockBlob, LeaseStatus.Unlocked, LeaseState.Available,
	// LeaseDuration.Unspecified, StandardBlobTier.Hot.
	if num("BlobType") != 2 || num("LeaseStatus") != 2 || num("LeaseState") != 1 || num("LeaseDuration") != 0 || num("StandardBlobTier") != 1 {
		t.Errorf("%s: enums BlobType %s LeaseStatus %s LeaseState %s StandardBlobTier %s", file, props["BlobType"], props["LeaseStatus"], props["LeaseState"], props["StandardBlobTier"])
	}
	if string(props["PageBlobSequenceNumber"]) != "null" || string(props["DeletedTime"]) != "null" {
		t.Errorf("%s: absent nullable members must be null", file)
	}
}

func TestParseStorageExtension(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]StorageExtension{"": StorageExtension5, "5": StorageExtension5, "5.x": StorageExtension5, " 4.X ": StorageExtension4, "4": StorageExtension4} {
		if got, err := ParseStorageExtension(in); err != nil || got != want {
			t.Errorf("ParseStorageExtension(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"3", "latest", "v5"} {
		if _, err := ParseStorageExtension(bad); err == nil || !strings.Contains(err.Error(), StorageExtensionSetting) {
			t.Errorf("ParseStorageExtension(%q) = %v, want an error naming the setting", bad, err)
		}
	}
}

func TestDateTimeOffset(t *testing.T) {
	t.Parallel()
	for tm, want := range map[time.Time]string{
		{}: "0001-01-01T00:00:00+00:00",
		time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC):                    "2025-03-01T08:00:00+00:00",
		time.Date(2025, 3, 1, 8, 0, 0, 214500000, time.UTC):            "2025-03-01T08:00:00.2145+00:00",
		time.Date(2025, 3, 1, 9, 0, 0, 0, time.FixedZone("CET", 3600)): "2025-03-01T08:00:00+00:00",
	} {
		if got := dateTimeOffset(tm); got != want {
			t.Errorf("dateTimeOffset(%v) = %q, want %q", tm, got, want)
		}
	}
}

// TestBlobEnvelope_ProtocolLayerReadsEveryShape sends each golden envelope
// through the handler's protocol layer: the blob is located and its
// content, metadata and advisory properties come out as encoded.
func TestBlobEnvelope_ProtocolLayerReadsEveryShape(t *testing.T) {
	t.Parallel()
	want := sampleInvocation(StorageExtension5, false)
	for _, file := range []string{"blob-5x-binary.json", "blob-5x-deferred.json", "blob-4x-binary.json"} {
		body, err := os.ReadFile(filepath.Join("testdata", "envelopes", file))
		if err != nil {
			t.Fatal(err)
		}
		var got invoke.Blob
		m := invoke.NewMux(zerologNop(), invoke.Options{})
		m.Handle("ingest-enqueue", invoke.BlobTrigger, func(_ ctxT, r *invoke.Request) (invoke.Result, error) {
			var err error
			got, err = r.Blob("blob")
			return invoke.Result{}, err
		})
		status, ct, reply := serve(m, "ingest-enqueue", body)
		if _, err := parseReply(status, ct, reply); err != nil {
			t.Fatalf("%s: reply: %v", file, err)
		}
		deferred := strings.Contains(file, "deferred")
		if got.Container != want.container || got.Name != want.name || got.Deferred != deferred ||
			got.Metadata["correlation_id"] != want.state.Metadata["correlation_id"] || !got.Created.Equal(want.state.CreatedOn) {
			t.Errorf("%s: decoded %+v", file, got)
		}
		if !deferred && (!bytes.Equal(got.Content, want.content) || got.Length != want.state.ContentLength) {
			t.Errorf("%s: content %q, length %d", file, got.Content, got.Length)
		}
		if strings.Contains(file, "4x") && got.ETag != want.state.bareETag() && got.ETag != want.state.ETag {
			t.Errorf("%s: the 4.x ETag %q is not read", file, got.ETag)
		}
	}
}

// TestBlobTrigger_WhatEachExtensionHonours: 5.x honours the Event Grid
// source and deferred binding; 4.x knows neither (it polls, and inlines).
func TestBlobTrigger_WhatEachExtensionHonours(t *testing.T) {
	t.Parallel()
	fn := &Function{Name: "f", Bindings: []Binding{{Type: "blobTrigger", Direction: "in", Name: "blob", Source: "EventGrid"}}}
	fn.Bindings[0].Properties.SupportsDeferredBinding = true
	plain := &Function{Name: "g", Bindings: []Binding{{Type: "blobTrigger", Direction: "in", Name: "blob"}}}
	for ext, want := range map[StorageExtension]bool{StorageExtension5: true, StorageExtension4: false} {
		h := &Host{app: &App{StorageExtension: ext}}
		if h.eventGrid(fn) != want || h.deferred(fn) != want {
			t.Errorf("%s: Event Grid %v, deferred %v; want %v", ext, h.eventGrid(fn), h.deferred(fn), want)
		}
		if h.eventGrid(plain) || h.deferred(plain) {
			t.Errorf("%s: a plain blob trigger is neither Event Grid nor deferred", ext)
		}
	}
}
