package devhost

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

// StorageExtension is the Storage Blobs extension whose blob trigger the dev
// host imitates. The binding data differ: the extension serialises the blob
// SDK's BlobProperties object with Newtonsoft, and the two SDKs' objects
// share little but the idea.
type StorageExtension int

const (
	// StorageExtension5 is Microsoft.Azure.WebJobs.Extensions.Storage.Blobs
	// 5.x, what extension bundle [4.*, 5.0.0) loads: Azure.Storage.Blobs
	// v12's BlobProperties (ContentLength, ContentHash, CreatedOn; ETag, a
	// struct without public members, as {}; DateTimeOffset "never" as
	// 0001-01-01T00:00:00+00:00; enums as numbers), the Event Grid source,
	// and deferred binding (a descriptor instead of the content). The
	// default.
	StorageExtension5 StorageExtension = iota
	// StorageExtension4 is Microsoft.Azure.WebJobs.Extensions.Storage 4.x
	// (bundles 2.x and 3.x): Microsoft.Azure.Storage.Blob's BlobProperties
	// (Length, ContentMD5, Created, the ETag as its quoted string, its own
	// enum numbers), polling only, always the content inline.
	StorageExtension4
)

// StorageExtensionSetting is the app setting (local.settings.json's Values,
// or the environment) that selects the extension: "5" (or "5.x", the
// default) or "4" (or "4.x").
const StorageExtensionSetting = "DEVHOST_STORAGE_EXTENSION"

// ParseStorageExtension reads a StorageExtensionSetting value; empty is 5.
func ParseStorageExtension(s string) (StorageExtension, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "5", "5.x":
		return StorageExtension5, nil
	case "4", "4.x":
		return StorageExtension4, nil
	}
	return 0, fmt.Errorf("%s=%q: want 5 (Storage Blobs extension 5.x, the default) or 4 (Storage extension 4.x)", StorageExtensionSetting, s)
}

func (e StorageExtension) String() string {
	if e == StorageExtension4 {
		return "4.x"
	}
	return "5.x"
}

// blobState is what a Get Blob Properties call reports about a blob, which
// is where the extension's BindAsync takes Properties and Metadata from
// (for the Event Grid source and the polling one alike). Absent values are
// zero; ETag is quoted, as the service sends it.
type blobState struct {
	ETag                        string
	BlobType                    string // BlockBlob, PageBlob or AppendBlob
	ContentLength               int64
	ContentType                 string
	ContentEncoding             string
	ContentLanguage             string
	ContentDisposition          string
	CacheControl                string
	ContentMD5                  []byte
	CreatedOn                   time.Time
	LastModified                time.Time
	LastAccessed                time.Time
	ExpiresOn                   time.Time
	AccessTier                  string
	AccessTierInferred          bool
	AccessTierChangedOn         time.Time
	SmartAccessTier             string
	ArchiveStatus               string
	RehydratePriority           string
	LeaseState                  string // available, leased, expired, breaking, broken
	LeaseStatus                 string // locked, unlocked
	LeaseDuration               string // infinite, fixed
	BlobSequenceNumber          int64
	BlobCommittedBlockCount     int32
	AcceptRanges                string
	IsServerEncrypted           bool
	EncryptionKeySHA256         string
	EncryptionScope             string
	IsIncrementalCopy           bool
	DestinationSnapshot         string
	CopyID                      string
	CopyProgress                string
	CopySource                  string
	CopyStatus                  string // pending, success, aborted, failed
	CopyStatusDescription       string
	CopyCompletedOn             time.Time
	VersionID                   string
	IsLatestVersion             bool
	IsSealed                    bool
	HasLegalHold                bool
	ImmutabilityExpiresOn       time.Time
	ImmutabilityPolicyMode      string
	ObjectReplicationPolicyID   string
	ObjectReplicationSourceRule map[string]string
	Metadata                    map[string]string
}

// bareETag is the ETag without its quotes, as listings, receipts and poison
// messages carry it.
func (s blobState) bareETag() string { return strings.Trim(s.ETag, `"`) }

// errBlobGone means the blob no longer exists: the extension then skips the
// invocation (and counts it done).
var errBlobGone = fmt.Errorf("blob no longer exists")

// blobProperties calls Get Blob Properties, as the extension does when it
// binds a trigger.
func (h *Host) blobProperties(ctx context.Context, container, name string) (blobState, error) {
	p, err := h.opts.blobs.ServiceClient().NewContainerClient(container).NewBlobClient(name).GetProperties(ctx, nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return blobState{}, errBlobGone
	}
	if err != nil {
		return blobState{}, fmt.Errorf("get properties of %s/%s: %w", container, name, err)
	}
	s := blobState{
		BlobType: string(deref(p.BlobType)), ContentLength: deref(p.ContentLength), ContentType: deref(p.ContentType),
		ContentEncoding: deref(p.ContentEncoding), ContentLanguage: deref(p.ContentLanguage),
		ContentDisposition: deref(p.ContentDisposition), CacheControl: deref(p.CacheControl), ContentMD5: p.ContentMD5,
		CreatedOn: deref(p.CreationTime), LastModified: deref(p.LastModified), LastAccessed: deref(p.LastAccessed),
		ExpiresOn: deref(p.ExpiresOn), AccessTier: deref(p.AccessTier), AccessTierInferred: deref(p.AccessTierInferred),
		AccessTierChangedOn: deref(p.AccessTierChangeTime), SmartAccessTier: deref(p.SmartAccessTier),
		ArchiveStatus: deref(p.ArchiveStatus), RehydratePriority: deref(p.RehydratePriority),
		LeaseState: string(deref(p.LeaseState)), LeaseStatus: string(deref(p.LeaseStatus)),
		LeaseDuration: string(deref(p.LeaseDuration)), BlobSequenceNumber: deref(p.BlobSequenceNumber),
		BlobCommittedBlockCount: deref(p.BlobCommittedBlockCount), AcceptRanges: deref(p.AcceptRanges),
		IsServerEncrypted: deref(p.IsServerEncrypted), EncryptionKeySHA256: deref(p.EncryptionKeySHA256),
		EncryptionScope: deref(p.EncryptionScope), IsIncrementalCopy: deref(p.IsIncrementalCopy),
		DestinationSnapshot: deref(p.DestinationSnapshot), CopyID: deref(p.CopyID), CopyProgress: deref(p.CopyProgress),
		CopySource: deref(p.CopySource), CopyStatus: string(deref(p.CopyStatus)),
		CopyStatusDescription: deref(p.CopyStatusDescription), CopyCompletedOn: deref(p.CopyCompletionTime),
		VersionID: deref(p.VersionID), IsLatestVersion: deref(p.IsCurrentVersion), IsSealed: deref(p.IsSealed),
		HasLegalHold: deref(p.LegalHold), ImmutabilityExpiresOn: deref(p.ImmutabilityPolicyExpiresOn),
		ImmutabilityPolicyMode: string(deref(p.ImmutabilityPolicyMode)), ObjectReplicationPolicyID: deref(p.ObjectReplicationPolicyID),
		Metadata: map[string]string{},
	}
	if p.ETag != nil {
		s.ETag = `"` + strings.Trim(string(*p.ETag), `"`) + `"`
	}
	for k, v := range p.ObjectReplicationRules {
		if s.ObjectReplicationSourceRule == nil {
			s.ObjectReplicationSourceRule = map[string]string{}
		}
		s.ObjectReplicationSourceRule[k] = deref(v)
	}
	// The service returns metadata names as they were stored; the Go SDK
	// reads them from headers and canonicalises them (Correlation_id), so
	// they are lowercased here, as offpath writes them and as listings
	// return them.
	for k, v := range p.Metadata {
		s.Metadata[strings.ToLower(k)] = deref(v)
	}
	return s, nil
}

// properties5 is Azure.Storage.Blobs' BlobProperties as Newtonsoft
// serialises it: every public property in declaration order, nulls
// included, enums as their numbers, DateTimeOffset "never" as the minimum
// value, ETag (a struct whose members are all private) as {}.
func properties5(s blobState) json.RawMessage {
	return object{
		{"LastModified", dateTimeOffset(s.LastModified)},
		{"CreatedOn", dateTimeOffset(s.CreatedOn)},
		{"Metadata", s.Metadata},
		{"ObjectReplicationDestinationPolicyId", nullable(s.ObjectReplicationPolicyID)},
		{"ObjectReplicationSourceProperties", replicationPolicies(s.ObjectReplicationSourceRule)},
		{"BlobType", enum(s.BlobType, "BlockBlob", "PageBlob", "AppendBlob")},
		{"CopyCompletedOn", dateTimeOffset(s.CopyCompletedOn)},
		{"CopyStatusDescription", nullable(s.CopyStatusDescription)},
		{"CopyId", nullable(s.CopyID)},
		{"CopyProgress", nullable(s.CopyProgress)},
		{"CopySource", nullable(s.CopySource)},
		// The legacy CopyStatus is BlobCopyStatus ?? Pending.
		{"CopyStatus", enum(s.CopyStatus, "pending", "success", "aborted", "failed")},
		{"BlobCopyStatus", nullableEnum(s.CopyStatus, "pending", "success", "aborted", "failed")},
		{"IsIncrementalCopy", s.IsIncrementalCopy},
		{"DestinationSnapshot", nullable(s.DestinationSnapshot)},
		{"LeaseDuration", enum(s.LeaseDuration, "infinite", "fixed")},
		{"LeaseState", enum(s.LeaseState, "available", "leased", "expired", "breaking", "broken")},
		{"LeaseStatus", enum(s.LeaseStatus, "locked", "unlocked")},
		{"ContentLength", s.ContentLength},
		{"ContentType", nullable(s.ContentType)},
		{"ETag", struct{}{}},
		{"ContentHash", s.ContentMD5}, // []byte: base64, or null
		{"ContentEncoding", nullable(s.ContentEncoding)},
		{"ContentDisposition", nullable(s.ContentDisposition)},
		{"ContentLanguage", nullable(s.ContentLanguage)},
		{"CacheControl", nullable(s.CacheControl)},
		{"BlobSequenceNumber", s.BlobSequenceNumber},
		{"AcceptRanges", nullable(s.AcceptRanges)},
		{"BlobCommittedBlockCount", s.BlobCommittedBlockCount},
		{"IsServerEncrypted", s.IsServerEncrypted},
		{"EncryptionKeySha256", nullable(s.EncryptionKeySHA256)},
		{"EncryptionScope", nullable(s.EncryptionScope)},
		{"AccessTier", nullable(s.AccessTier)},
		{"AccessTierInferred", s.AccessTierInferred},
		{"ArchiveStatus", nullable(s.ArchiveStatus)},
		{"AccessTierChangedOn", dateTimeOffset(s.AccessTierChangedOn)},
		{"SmartAccessTier", nullable(s.SmartAccessTier)},
		{"VersionId", nullable(s.VersionID)},
		{"IsLatestVersion", s.IsLatestVersion},
		{"TagCount", 0}, // Get Blob Properties does not report it
		{"ExpiresOn", dateTimeOffset(s.ExpiresOn)},
		{"IsSealed", s.IsSealed},
		{"RehydratePriority", nullable(s.RehydratePriority)},
		{"LastAccessed", dateTimeOffset(s.LastAccessed)},
		{"ImmutabilityPolicy", object{
			{"ExpiresOn", nullableDateTimeOffset(s.ImmutabilityExpiresOn)},
			{"PolicyMode", nullableEnum(s.ImmutabilityPolicyMode, "mutable", "unlocked", "locked")},
		}},
		{"HasLegalHold", s.HasLegalHold},
	}.json()
}

// properties4 is Microsoft.Azure.Storage.Blob's BlobProperties as
// Newtonsoft serialises it. Its enums start with Unspecified (0), so an
// unleased blob's LeaseDuration is 0; the ETag is its quoted string.
func properties4(s blobState) json.RawMessage {
	var md5 any
	if len(s.ContentMD5) > 0 {
		md5 = base64.StdEncoding.EncodeToString(s.ContentMD5)
	}
	var pageSeq, appendBlocks any
	switch s.BlobType {
	case "PageBlob":
		pageSeq = s.BlobSequenceNumber
	case "AppendBlob":
		appendBlocks = s.BlobCommittedBlockCount
	}
	return object{
		{"CacheControl", nullable(s.CacheControl)},
		{"ContentDisposition", nullable(s.ContentDisposition)},
		{"ContentEncoding", nullable(s.ContentEncoding)},
		{"ContentLanguage", nullable(s.ContentLanguage)},
		{"Length", s.ContentLength},
		{"ContentMD5", md5},
		{"ContentType", nullable(s.ContentType)},
		{"ETag", nullable(s.ETag)},
		{"Created", nullableDateTimeOffset(s.CreatedOn)},
		{"LastModified", nullableDateTimeOffset(s.LastModified)},
		{"BlobType", enum(s.BlobType, "", "PageBlob", "BlockBlob", "AppendBlob")},
		{"LeaseStatus", enum(s.LeaseStatus, "", "locked", "unlocked")},
		{"LeaseState", enum(s.LeaseState, "", "available", "leased", "expired", "breaking", "broken")},
		{"LeaseDuration", enum(s.LeaseDuration, "", "fixed", "infinite")},
		{"PageBlobSequenceNumber", pageSeq},
		{"AppendBlobCommittedBlockCount", appendBlocks},
		{"IsServerEncrypted", s.IsServerEncrypted},
		{"IsIncrementalCopy", s.IsIncrementalCopy},
		{"StandardBlobTier", nullableEnum(s.AccessTier, "", "Hot", "Cool", "Archive")},
		{"RehydrationStatus", nil},
		{"PremiumPageBlobTier", nil},
		{"BlobTierInferred", s.AccessTierInferred},
		{"BlobTierLastModifiedTime", nullableDateTimeOffset(s.AccessTierChangedOn)},
		{"DeletedTime", nil},
		{"RemainingDaysBeforePermanentDelete", nil},
	}.json()
}

// deferredDescriptor is the ParameterBindingData the 5.x extension sends for
// a trigger with supportsDeferredBinding: Content is a BinaryData holding
// {"Connection","ContainerName","BlobName"} as JSON, and Newtonsoft
// serialises a BinaryData by its public properties, so the handler sees the
// length of that JSON, not of the blob, and a null MediaType.
func deferredDescriptor(connection, container, name string) json.RawMessage {
	content := mustJSON(object{{"Connection", connection}, {"ContainerName", container}, {"BlobName", name}})
	return object{
		{"Version", "1.0"},
		{"Source", "AzureStorageBlobs"},
		{"Content", object{{"IsEmpty", len(content) == 0}, {"Length", len(content)}, {"MediaType", nil}}},
		{"ContentType", "application/json"},
	}.json()
}

// object is a JSON object whose members keep their order, as Newtonsoft
// writes a class's properties in declaration order.
type object []member

type member struct {
	name  string
	value any
}

func (o object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		name, err := json.Marshal(m.name)
		if err != nil {
			return nil, err
		}
		value, err := json.Marshal(m.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(value)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func (o object) json() json.RawMessage { return mustJSON(o) }

// dateTimeOffset is a DateTimeOffset inside a serialised object:
// Newtonsoft's ISO format with up to seven fraction digits (none when the
// fraction is zero) and the offset; the zero time is DateTimeOffset.MinValue.
func dateTimeOffset(t time.Time) string {
	if t.IsZero() {
		return "0001-01-01T00:00:00+00:00"
	}
	return strings.Replace(t.UTC().Format("2006-01-02T15:04:05.9999999Z07:00"), "Z", "+00:00", 1)
}

// nullableDateTimeOffset is a DateTimeOffset?: null when absent.
func nullableDateTimeOffset(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return dateTimeOffset(t)
}

// nullable is a .NET string property: null when the service sent nothing.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// enum is the number of value among names, compared case-insensitively;
// an unknown or empty value is the enum's default, 0.
func enum(value string, names ...string) int {
	for i, n := range names {
		if n != "" && strings.EqualFold(n, value) {
			return i
		}
	}
	return 0
}

// nullableEnum is enum for a nullable enum property: null when absent.
func nullableEnum(value string, names ...string) any {
	if value == "" {
		return nil
	}
	return enum(value, names...)
}

// replicationPolicies is ObjectReplicationSourceProperties, parsed from the
// x-ms-or-{policy}_{rule} headers into policies with their rules' status;
// null when the blob has none.
func replicationPolicies(rules map[string]string) any {
	if len(rules) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(rules))
	byPolicy := map[string][]object{}
	var order []string
	for _, k := range keys {
		status := rules[k]
		policy, rule, _ := strings.Cut(strings.TrimPrefix(k, "or-"), "_")
		if _, ok := byPolicy[policy]; !ok {
			order = append(order, policy)
		}
		byPolicy[policy] = append(byPolicy[policy], object{{"RuleId", rule}, {"ReplicationStatus", enum(status, "complete", "failed")}})
	}
	out := make([]object, 0, len(order))
	for _, p := range order {
		out = append(out, object{{"PolicyId", p}, {"Rules", byPolicy[p]}})
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
