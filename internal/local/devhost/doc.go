// Package devhost plays the Azure Functions host for an app folder on a
// machine without Core Tools, faithfully enough that a handler which works
// here works under the real host:
//
//   - it starts the custom handler from host.json's customHandler.description
//     with the port, the worker id and the app settings of local.settings.json
//     in its environment, waits for GET /, and restarts it if it dies;
//   - it encodes every invocation as the host does (double-encoded strings,
//     stringified numbers, zone-less DateTimes, base64 for dataType binary)
//     and reads replies by the host's rules (2xx only, JSON media type, a
//     non-null object, output strings base64-decoded unless dataType binary,
//     JSON-array strings split into several messages);
//   - timers fire on their six-field NCRONTAB schedules with the host's
//     TimerInfo (IsPastDue, ScheduleStatus kept in Azurite across restarts),
//     and POST /admin/functions/{name} fires any non-HTTP function now;
//   - blob triggers fire for new or changed blobs in Azurite (package
//     blobwatch: receipts per ETag, five tries, then poison), and bind as
//     the Storage extension does: Get Blob Properties, then the envelope in
//     the extension's shape. By default that is the 5.x extension that
//     extension bundle [4.*, 5.0.0) loads (Azure.Storage.Blobs v12's
//     BlobProperties, the deferred descriptor where supportsDeferredBinding
//     is set; the Event Grid source binds whatever version is there, the
//     polling one skips a blob that changed since it was found; Event Grid
//     deliveries are taken at /runtime/webhooks/blobs). The app
//     setting DEVHOST_STORAGE_EXTENSION=4 selects the 4.x extension (the
//     older BlobProperties, content inline, polling only);
//   - Service Bus triggers and outputs use a durable at-least-once stand-in on
//     Azurite (package sbemu: PeekLock, DeliveryCount, dead-lettering after
//     MaxDeliveryCount, maxConcurrentCalls from host.json, 256 KB limit);
//   - HTTP functions are served on :7071 under the route prefix, with
//     authLevel enforced by the function and master keys of the local
//     settings, in forwarding or envelope mode as the host decides.
//
// Every invocation is logged as one structured line (function, trigger,
// invocation id, duration, outcome), and recorded as an Event with what the
// host did around it (messages sent and settled, blob scans): Host.Wait
// returns the first event a test is waiting for.
package devhost
