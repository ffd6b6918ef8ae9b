package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/chunk"
	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/extract"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/outcome"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/tokens"
)

// Delivery is one Service Bus delivery of a claim check.
type Delivery struct {
	Body      []byte
	MessageID string
	// DeliveryCount is 1 on the first delivery.
	DeliveryCount int
	// EnqueuedTime is when the message was sent; it dates the ledger rows,
	// so that every redelivery writes the same ones.
	EnqueuedTime time.Time
	// Queue is the queue the message came from.
	Queue string
}

// Processor is the ingest-process functions' logic. It is safe for
// concurrent use; build one per process, so that its tenant cache and the
// Models' rate limiter are shared by every invocation.
type Processor struct {
	o          Options
	tenants    *tenantCache
	rejections *Rejections
}

// NewProcessor returns a Processor.
func NewProcessor(o Options) (*Processor, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if o.Ledger == nil || o.Models == nil || o.Blobs == nil {
		return nil, errors.New("ingest: the processor needs a ledger, models and blobs")
	}
	tenants := &tenantCache{src: o.Tenants, ttl: o.TenantTTL, now: o.Now}
	return &Processor{o: o, tenants: tenants, rejections: &Rejections{tenants: tenants, statuses: o.Statuses, alias: o.Alias, now: o.Now}}, nil
}

// Process redeems one claim check and returns the document's status. The
// error is nil for done, an outcome.Error for refused and rejected (both
// recorded), and anything else for a transient failure: the message should
// be abandoned and redelivered. Each delivery's outcome is counted in
// Options.Outcomes, but for a redelivery of a version already finished.
func (p *Processor) Process(ctx context.Context, d Delivery) (st document.Status, err error) {
	owner := document.Unattributed // until the claim check names a tenant that exists
	defer func() {
		if p.o.Outcomes != nil && owner != "" {
			p.o.Outcomes.Settled(owner, outcome.Of(err))
		}
	}()
	if p.o.Budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.o.Budget)
		defer cancel()
	}
	msg, err := p.o.Rules.Decode(d.Body)
	if err != nil {
		return p.rejectMessage(ctx, d, err)
	}
	name, err := p.o.Rules.ParseURL(msg.BlobURL)
	if err != nil { // Decode validated it
		return p.rejectMessage(ctx, d, outcome.Reject("invalid claim check", err))
	}
	// A claim check for a tenant that does not exist is nobody's: it is
	// recorded unattributed, never in a partition of that name.
	if _, err := p.tenants.get(ctx, msg.Tenant); errors.Is(err, tenant.ErrNotFound) {
		return p.rejectMessage(ctx, d, outcome.Reject("unknown tenant", fmt.Errorf("no tenant %q", msg.Tenant)))
	} else if err != nil {
		return document.Status{}, err
	}
	owner = msg.Tenant
	log := zerolog.Ctx(ctx).With().Str("tenant", msg.Tenant).Str("correlation_id", msg.CorrelationID).
		Int("delivery_count", d.DeliveryCount).Logger()
	ctx = log.WithContext(ctx)

	st, err = p.o.Statuses.Get(ctx, msg.Tenant, name.Name)
	if err != nil && !errors.Is(err, document.ErrNotFound) {
		return document.Status{}, err
	}
	if err == nil && st.SameVersion(msg.ETag) && st.State.Final() {
		owner = "" // counted when it finished
		log.Info().Str("state", string(st.State)).Msg("this version is processed already; nothing to do")
		return st, nil
	}
	if err == nil && superseded(st, msg.ETag, d) {
		owner = "" // the later delivery is counted
		log.Info().Int("status_delivery", st.Deliveries).Msg("a later delivery of this message has the document; nothing to do")
		return st, nil
	}
	j := &job{p: p, msg: msg, name: name, d: d, log: log, started: p.o.Now().UTC()}
	st, err = j.run(ctx)
	if j.stoodDown {
		owner = "" // the later delivery is counted
	}
	return st, err
}

// rejectMessage records a claim check that names no document it may
// touch; see Rejections.
func (p *Processor) rejectMessage(ctx context.Context, d Delivery, cause error) (document.Status, error) {
	return p.rejections.recordMessage(ctx, d, cause)
}

// job is the processing of one delivery.
type job struct {
	p       *Processor
	msg     claimcheck.Message
	name    claimcheck.BlobName
	d       Delivery
	log     zerolog.Logger
	started time.Time

	chat, embed catalog.Deployment
	meta        docMeta
	chunks      int
	textBytes   int64
	embedUsage  ledger.Usage
	embedTrace  Trace
	chatUsage   ledger.Usage
	chatTrace   Trace
	embedModel  string
	refusedAt   string // deployment whose refusal ended or marked the job
	opened      bool   // the blob matched the claim check's ETag
	stoodDown   bool   // a later delivery of the message superseded this one
}

func (j *job) run(ctx context.Context) (document.Status, error) {
	st, err := j.process(ctx)
	if err == nil || st.State.Final() { // done, or refused with its result written
		return st, err
	}
	switch outcome.Of(err) {
	case outcome.Rejected, outcome.Refused:
		return j.finishEarly(ctx, err)
	default:
		if st := j.retrying(ctx, err); j.superseded(st) {
			j.stoodDown = true // a later delivery has the message; this one's failure is moot
			return st, nil
		}
		return document.Status{}, err
	}
}

// process does the work; it returns the final status on success (done, or
// refused after a refused summary) and an error otherwise.
func (j *job) process(ctx context.Context) (document.Status, error) {
	p := j.p
	if err := p.tenants.admit(ctx, j.msg.Tenant, j.msg.ModelAlias); err != nil {
		return document.Status{}, err
	}
	alias, ok := p.o.Catalog.Alias(j.msg.ModelAlias)
	if !ok || alias.Queue == nil || alias.Embedding == nil {
		return document.Status{}, outcome.Reject("alias cannot ingest", fmt.Errorf("alias %q needs a queue and an embedding deployment in the model catalog", j.msg.ModelAlias))
	}
	j.chat, j.embed = *alias.Queue, *alias.Embedding
	if len(j.resultName()) > claimcheck.MaxNameBytes {
		return document.Status{}, outcome.Reject("invalid blob name", fmt.Errorf("name of %d bytes: its result's name would be too long", len(j.name.Name)))
	}
	kind, err := extract.KindOf(j.name.Name, j.msg.ContentType)
	if err != nil {
		return document.Status{}, err
	}

	body, _, err := p.o.Blobs.Open(ctx, j.name.Name, j.msg.ETag)
	switch {
	case errors.Is(err, object.ErrNotFound):
		return document.Status{}, outcome.Reject("blob is gone", err)
	case errors.Is(err, object.ErrChanged):
		return document.Status{}, outcome.Reject("blob changed since it was enqueued", err)
	case err != nil:
		return document.Status{}, err
	}
	defer body.Close()
	j.opened = true
	st, err := j.save(ctx, func(st *document.Status) {
		st.State, st.Reason, st.Started, st.Finished = document.Processing, "", j.started, time.Time{}
		st.Deliveries, st.MessageID = j.d.DeliveryCount, j.d.MessageID
	})
	if err != nil {
		return document.Status{}, err
	}
	if j.superseded(st) { // a later delivery started since Process read the status
		j.stoodDown = true
		return st, nil
	}

	x, err := extract.New(kind, body, extract.Options{MaxInputBytes: p.o.Rules.Policy().MaxDocumentBytes})
	if err != nil {
		return document.Status{}, err
	}
	sp, err := chunk.New(x, p.o.Chunk)
	if err != nil {
		return document.Status{}, err
	}
	j.meta = docMeta{ID: documentID(j.name.Name), Tenant: j.msg.Tenant, Path: j.name.Path, URL: j.msg.BlobURL,
		ETag: j.msg.ETag, ContentType: j.msg.ContentType, CorrelationID: j.msg.CorrelationID}
	j.meta.encode()
	w := p.o.Blobs.NewResult(j.resultName())

	headLimit := tokens.MaxBytes(p.o.SummaryInputTokens)
	head := make([]byte, 0, min(headLimit, 64<<10))
	var group []chunk.Chunk
	groupTokens := 0
	var line []byte
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		texts := make([]string, len(group))
		for i, c := range group {
			texts[i] = c.Text
		}
		emb, err := p.o.Models.Embed(ctx, j.embed.Name, texts)
		j.embedUsage.Add(emb.Usage)
		j.embedTrace.Add(emb.Trace)
		if emb.Model != "" {
			j.embedModel = emb.Model
		}
		if err != nil && outcome.Of(err) == outcome.Refused {
			j.refusedAt = j.embed.Name
		}
		j.meterCall(ctx)
		if err != nil {
			return err
		}
		for i, c := range group {
			if line, err = appendChunkLine(line[:0], &j.meta, c, emb.Vectors[i]); err != nil {
				return outcome.Retry(err, 0)
			}
			if err := w.Write(ctx, line); err != nil {
				return err
			}
		}
		group, groupTokens = group[:0], 0
		return nil
	}
	for c, err := range sp.All() {
		if err != nil {
			return document.Status{}, err
		}
		j.chunks++
		j.textBytes += int64(len(c.Text) - c.Overlap)
		if room := headLimit - len(head); room > 0 {
			head = append(head, c.Text[c.Overlap:][:min(room, len(c.Text)-c.Overlap)]...)
		}
		if len(group) == p.o.EmbedBatch || (len(group) > 0 && groupTokens+c.Tokens > p.o.EmbedBatchTokens) {
			if err := flush(); err != nil {
				return document.Status{}, err
			}
		}
		group = append(group, c)
		groupTokens += c.Tokens
	}
	if err := flush(); err != nil {
		return document.Status{}, err
	}

	sum, summaryErr := p.o.Models.Summarize(ctx, j.chat.Name, string(head), p.o.SummaryMaxTokens)
	j.chatUsage, j.chatTrace = sum.Usage, sum.Trace
	var summaryRefusal *Refusal
	if summaryErr != nil && outcome.Of(summaryErr) == outcome.Refused && errors.As(summaryErr, &summaryRefusal) {
		j.refusedAt = j.chat.Name
	}
	j.meterCall(ctx)
	if summaryErr != nil {
		if summaryRefusal == nil {
			return document.Status{}, summaryErr
		}
		j.log.Warn().Str("stage", summaryRefusal.Stage).Strs("categories", summaryRefusal.Categories).
			Msg("the content filter refused the summary; the chunks are indexed without it")
	}

	// Meter, then publish, then say done: a result is never visible
	// unmetered, and a crash anywhere before the status redoes it all.
	if err := j.meter(ctx); err != nil {
		return document.Status{}, err
	}
	doc := documentLine{Kind: "document", docMeta: j.meta, Size: j.msg.Size, Chunks: j.chunks,
		EmbeddingModel: j.embedModel, ChatModel: sum.Model, Processed: p.o.Now().UTC()}
	state := document.Done
	if summaryRefusal != nil {
		doc.SummaryRefused = &refusal{Stage: summaryRefusal.Stage, Categories: summaryRefusal.Categories}
		state = document.Refused
	} else {
		doc.Summary, doc.Keywords, doc.SummaryTruncated = sum.Text, sum.Keywords, sum.Truncated
	}
	if err := w.Commit(ctx, doc.encode(), ResultContentType, map[string]string{
		"offpath_etag": j.msg.ETag, "offpath_state": string(state), "offpath_chunks": strconv.Itoa(j.chunks),
		// Metadata travels in headers, which storage takes as ASCII: the
		// correlation id, text in any script, is percent-encoded (UTF-8), the
		// form the enqueue reads.
		"offpath_correlation_id": url.PathEscape(j.msg.CorrelationID),
	}); err != nil {
		return document.Status{}, err
	}
	st, err = j.save(ctx, func(st *document.Status) {
		j.finished(st, state)
		st.Result = p.o.ResultsContainer + "/" + j.resultName()
		if summaryRefusal != nil {
			st.Reason = reason(summaryErr)
		}
	})
	if err != nil {
		return document.Status{}, err
	}
	if j.superseded(st) {
		return st, j.standDown(ctx)
	}
	j.log.Info().Str("state", string(state)).Int("chunks", j.chunks).Int64("prompt_tokens", st.Usage.PromptTokens).
		Int64("completion_tokens", st.Usage.CompletionTokens).Int64("throttled", st.Calls.Throttled).
		Dur("took", st.Duration()).Msg("document processed")
	if summaryRefusal != nil {
		return st, summaryErr
	}
	return st, nil
}

// finishEarly records a rejection or a refusal that left no result: the
// usage so far is metered (it was spent), and a result of an earlier
// version is removed, since it no longer describes the document.
func (j *job) finishEarly(ctx context.Context, cause error) (document.Status, error) {
	state := document.Rejected
	if outcome.Of(cause) == outcome.Refused {
		state = document.Refused
	}
	if j.chat.Name != "" {
		if err := j.meter(ctx); err != nil {
			return document.Status{}, err
		}
	}
	if !j.opened {
		// The claim check is stale or the document is gone: the status, if
		// any, belongs to the document's newer version (or says it is gone).
		if errors.Is(cause, object.ErrChanged) {
			j.log.Info().Str("reason", reason(cause)).Msg("stale claim check; a newer version has its own")
			return document.Status{State: state, Reason: reason(cause)}, cause
		}
	} else if err := j.p.o.Blobs.DeleteResult(ctx, j.resultName()); err != nil {
		return document.Status{}, err
	}
	st, err := j.save(ctx, func(st *document.Status) {
		j.finished(st, state)
		st.Reason = reason(cause)
		st.Result = ""
	})
	if err != nil {
		return document.Status{}, err
	}
	if j.superseded(st) {
		return st, j.standDown(ctx)
	}
	return st, cause
}

// retrying records a transient failure, best effort: the message is going
// back to the queue whatever happens here. On the queue's last delivery
// Service Bus dead-letters the message instead of redelivering it, so the
// document is recorded dead-lettered, with this failure as the reason. It
// returns the status as it stands (zero if it could not be read).
func (j *job) retrying(ctx context.Context, cause error) document.Status {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	state := document.Retrying
	if limit := j.p.o.maxDeliveryCount(j.d.Queue); j.d.DeliveryCount >= limit {
		state = document.DeadLettered
		j.log.Warn().Str("reason", reason(cause)).Int("max_delivery_count", limit).
			Msg("the last delivery failed: the message goes to the dead-letter queue")
	}
	st, err := j.save(ctx, func(st *document.Status) {
		st.State, st.Reason, st.Deliveries, st.MessageID = state, reason(cause), j.d.DeliveryCount, j.d.MessageID
		st.Finished = j.p.o.Now().UTC()
	})
	if err != nil {
		j.log.Warn().Err(err).Str("state", string(state)).Msg("could not record the transient failure")
	}
	return st
}

// finished fills in the outcome of this attempt.
func (j *job) finished(st *document.Status, state document.State) {
	st.State, st.Reason = state, ""
	st.Deliveries, st.MessageID = j.d.DeliveryCount, j.d.MessageID
	st.Started, st.Finished = j.started, j.p.o.Now().UTC()
	st.Chunks, st.TextBytes = j.chunks, j.textBytes
	st.Usage = j.embedUsage
	st.Usage.Add(j.chatUsage)
	t := j.embedTrace
	t.Add(j.chatTrace)
	st.Usage.Requests = int64(t.Requests)
	st.Calls = document.Calls{Attempts: int64(t.Attempts), Throttled: int64(t.Throttled), Waited: t.Waited}
}

// save updates the document's status for this version. It writes when the
// row is this version's, or there is none, or it is an older version's
// (enqueued before this message); a newer version's row is left alone, and
// so is one a later delivery of this message wrote (see superseded).
func (j *job) save(ctx context.Context, change func(st *document.Status)) (document.Status, error) {
	return j.p.o.Statuses.Update(ctx, j.msg.Tenant, j.name.Name, func(st *document.Status, found bool) (bool, error) {
		if found && j.superseded(*st) {
			return false, nil
		}
		if found && !st.SameVersion(j.msg.ETag) {
			older := !j.d.EnqueuedTime.IsZero() && !st.Enqueued.After(j.d.EnqueuedTime)
			if !older && !st.State.Final() {
				return false, nil
			}
			found = false
		}
		if !found {
			*st = document.Status{Tenant: j.msg.Tenant, Name: j.name.Name, BlobURL: j.msg.BlobURL, ETag: j.msg.ETag,
				Size: j.msg.Size, ContentType: j.msg.ContentType, Alias: j.msg.ModelAlias, CorrelationID: j.msg.CorrelationID,
				Queue: j.d.Queue, State: document.Queued, Enqueued: j.d.EnqueuedTime.UTC()}
		}
		change(st)
		return true, nil
	})
}

// superseded reports whether st, the status of the version etag, was
// written by a later delivery of d's message: d lost its lock (the host
// gave up on it while it worked, or it came late) and Service Bus handed
// the message on. The later delivery owns the outcome; d's status would be
// stale (a failure recorded over a success, or an older delivery count).
func superseded(st document.Status, etag string, d Delivery) bool {
	return st.SameVersion(etag) && st.MessageID == d.MessageID && st.Deliveries > d.DeliveryCount
}

// superseded is superseded for this delivery.
func (j *job) superseded(st document.Status) bool { return superseded(st, j.msg.ETag, j.d) }

// standDown ends an attempt that a later delivery superseded after it had
// metered: its rows go back to unfinished, as the later delivery's meter
// marks them (it may have run before this one's), so that exactly the
// delivery whose status stands has finished rows. Its calls were billed and
// stay in the ledger.
func (j *job) standDown(ctx context.Context) error {
	j.stoodDown = true
	j.log.Info().Msg("a later delivery of this message owns the document's status; this attempt's usage stays, marked abandoned")
	if err := j.record(ctx, true); err != nil {
		return fmt.Errorf("mark a superseded attempt abandoned: %w", err)
	}
	return nil
}

// meter records what the model calls of this attempt cost, one row per
// deployment, finished: the document has its outcome. Earlier deliveries
// of this version did not finish it (or this one would have nothing to
// do), even if one of them got as far as its own final meter: their rows
// are marked abandoned.
func (j *job) meter(ctx context.Context) error {
	if err := j.record(ctx, false); err != nil {
		return fmt.Errorf("meter usage: %w", err)
	}
	var earlier []ledger.Entry
	for d := 1; d < j.d.DeliveryCount; d++ {
		for _, dep := range []string{j.embed.Name, j.chat.Name} {
			earlier = append(earlier, j.entry(dep, d))
		}
	}
	if err := j.p.o.Ledger.Abandon(ctx, earlier); err != nil {
		return fmt.Errorf("meter usage: %w", err)
	}
	return nil
}

// entry is the ledger row of one deployment and delivery of this version,
// without its usage.
func (j *job) entry(dep string, delivery int) ledger.Entry {
	month := ledger.MonthOf(j.d.EnqueuedTime)
	if j.d.EnqueuedTime.IsZero() {
		month = ledger.MonthOf(j.started)
	}
	return ledger.Entry{Tenant: j.msg.Tenant, Month: month, Path: ledger.Queue, Alias: j.msg.ModelAlias, Deployment: dep,
		Unit: AttemptUnit(j.name.Name, j.msg.BlobURL, j.msg.ETag, j.d.MessageID, delivery)}
}

// meterCall records, as a model call returns, what this attempt has spent
// so far, unfinished: if the process dies or the delivery is retried from
// here, the ledger still holds what Azure billed for it. A failure is only
// logged: the attempt goes on, and its final meter writes the same rows.
func (j *job) meterCall(ctx context.Context) {
	if err := j.record(ctx, true); err != nil {
		j.log.Warn().Err(err).Msg("usage of a model call not recorded yet; recorded when the document ends")
	}
}

// record writes the attempt's usage so far, one row per deployment, under
// the attempt's unit: the document version and the delivery. A redelivery
// of the same attempt rewrites the same rows, a new one adds its own, so
// that each delivery's spend is kept, finished or not.
func (j *job) record(ctx context.Context, unfinished bool) error {
	var entries []ledger.Entry
	add := func(dep string, u ledger.Usage, t Trace) {
		if t.Requests == 0 && u.TotalTokens() == 0 && j.refusedAt != dep {
			return
		}
		e := j.entry(dep, j.d.DeliveryCount)
		e.Recorded, e.Unfinished = j.p.o.Now().UTC(), unfinished
		e.Usage = u
		e.Requests = int64(t.Requests)
		if j.refusedAt == dep {
			e.Refusals = 1
			e.Requests = max(e.Requests, 1)
		}
		if err := e.Estimate(j.p.o.Catalog); err != nil {
			j.log.Warn().Err(err).Str("deployment", dep).Msg("no price: the ledger row has no cost")
		}
		entries = append(entries, e)
	}
	add(j.embed.Name, j.embedUsage, j.embedTrace)
	add(j.chat.Name, j.chatUsage, j.chatTrace)
	if len(entries) == 0 {
		return nil
	}
	return j.p.o.Ledger.RecordBatch(ctx, entries)
}

// AttemptUnit is the ledger unit of one delivery of a message carrying a
// document version: "ingest:{name}@{etag}#{delivery}~{message}", or a
// digest when that is too long. The message id keeps apart two messages
// with the same claim check (a blob event delivered twice): each one's
// calls were billed, so each keeps its own rows.
func AttemptUnit(name, blobURL, etag, messageID string, delivery int) string {
	suffix := "#" + strconv.Itoa(max(delivery, 1))
	if messageID != "" {
		suffix += "~" + messageID
	}
	unit := "ingest:" + name + "@" + etag + suffix
	if len(unit) > ledger.MaxUnitLen {
		sum := sha256.Sum256([]byte(blobURL + "\x00" + etag + "\x00" + messageID))
		unit = "ingest:sha256:" + hex.EncodeToString(sum[:]) + "#" + strconv.Itoa(max(delivery, 1))
	}
	return unit
}

// resultSuffix makes a document's name its result's.
const resultSuffix = ".jsonl"

// resultName is the result's name in the results container.
func (j *job) resultName() string { return j.name.Name + resultSuffix }
