// The Service Bus namespace and offpath's two ingestion queues. Messages are
// claim checks (a blob URL, its ETag, tenant, model alias, correlation id;
// about 1-2 KB), never documents, so Standard's 256 KB limit is far away.
// Local (SAS) authentication is disabled: the Functions host, the workers and
// KEDA all authenticate with Entra ID.

param location string
param tags object
param namespaceName string

@allowed([
  'Enabled'
  'Disabled'
])
param publicNetworkAccess string

var lightQueueName = 'doc-ingest'
var heavyQueueName = 'doc-ingest-heavy'

// Shared by both queues:
// - lockDuration PT1M: the Functions host renews locks itself (host.json
//   maxAutoLockRenewalDuration 00:10:00), so a short lock only shortens how
//   long a message stays invisible after an instance or pod dies mid-work.
// - defaultMessageTimeToLive P4D with deadLetteringOnMessageExpiration: a
//   backlog that waits longer than a long weekend goes to the dead-letter
//   queue, which raises the dead-letter alert, instead of vanishing.
// - maxSizeInMegabytes 1024 (Standard's smallest): at ~2 KB a message that
//   is about half a million waiting documents, dead letters included.
// - requiresDuplicateDetection false: duplicate detection drops a message
//   whose MessageId was seen within a window, but the claim checks are sent
//   through the Functions host's Service Bus output binding, and a custom
//   handler can set only the message body: the host gives every message a
//   MessageId of its own, so no two sends would ever look alike. Event Grid
//   delivers at least once and a blob trigger may fire twice, so the same
//   claim check can be queued twice; the processing side catches it (a
//   version already done, refused or rejected is recognised and nothing is
//   done or metered twice). Detection would only cost throughput. (Service
//   Bus does not let it be changed on an existing queue.)
// - enablePartitioning false: ordering and size limits stay simple.
var common = {
  lockDuration: 'PT1M'
  defaultMessageTimeToLive: 'P4D'
  deadLetteringOnMessageExpiration: true
  maxSizeInMegabytes: 1024
  requiresDuplicateDetection: false
  requiresSession: false
  enablePartitioning: false
  enableBatchedOperations: true
}

resource sb 'Microsoft.ServiceBus/namespaces@2024-01-01' = {
  name: namespaceName
  location: location
  tags: tags
  sku: {
    name: 'Standard'
    tier: 'Standard'
  }
  properties: {
    disableLocalAuth: true
    minimumTlsVersion: '1.2'
    publicNetworkAccess: publicNetworkAccess
  }
}

// MaxDeliveryCount 5: offpath waits out 429s and 5xx in process (within a
// budget) before it gives a message back, so every delivery is already a
// patient attempt; five of them mean a real infrastructure failure, which
// belongs in the dead-letter queue.
resource light 'Microsoft.ServiceBus/namespaces/queues@2024-01-01' = {
  parent: sb
  name: lightQueueName
  properties: union(common, {
    maxDeliveryCount: 5
  })
}

// MaxDeliveryCount 8 on the heavy queue: its pods are stopped by KEDA
// scale-in, node upgrades and evictions, and a lock lost that way also
// counts as a delivery; three more deliveries absorb that churn.
resource heavy 'Microsoft.ServiceBus/namespaces/queues@2024-01-01' = {
  parent: sb
  name: heavyQueueName
  properties: union(common, {
    maxDeliveryCount: 8
  })
}

output id string = sb.id
output name string = sb.name
output fullyQualifiedNamespace string = '${sb.name}.servicebus.windows.net'
output lightQueueName string = light.name
output heavyQueueName string = heavy.name
