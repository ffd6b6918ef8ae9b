// The storage account: the Functions host's own storage (AzureWebJobsStorage),
// offpath's containers and tables, and the Flex deployment container.
// Shared-key access is disabled, so every client (host, handler, azd,
// operators) authenticates with Entra ID.

param location string
param tags object
param storageName string
param systemTopicName string

@minValue(1)
param resultsRetentionDays int

@minValue(1)
param batchInputsRetentionDays int

@allowed([
  'Enabled'
  'Disabled'
])
param publicNetworkAccess string

@allowed([
  'Standard_LRS'
  'Standard_ZRS'
])
param skuName string = 'Standard_LRS'

// incoming: documents dropped by tenants ({tenant}/...), the blob trigger's
// source. ingested: the queue path's results. batch-inputs / batch-results:
// the JSONL offpath submits and the output and error files it harvests.
// tickets: the day's tickets for the nightly summaries. reports: morning
// reports. app-package: the Flex deployment package (written by azd).
var deploymentContainerName = 'app-package'
var containerNames = [
  'incoming'
  'ingested'
  'batch-inputs'
  'batch-results'
  'tickets'
  'reports'
  deploymentContainerName
]
// Table Storage names take no hyphens; the first and the last match
// internal/tablestore's defaults.
var tableNames = [
  'offpathtenants'
  'offpathjobs'
  'offpathdocuments'
  'offpathledger'
]

resource stg 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: storageName
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: skuName
  }
  properties: {
    accessTier: 'Hot'
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    allowBlobPublicAccess: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    publicNetworkAccess: publicNetworkAccess
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: stg
  name: 'default'
}

resource containers 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = [
  for name in containerNames: {
    parent: blobService
    name: name
    properties: {
      publicAccess: 'None'
    }
  }
]

resource tableService 'Microsoft.Storage/storageAccounts/tableServices@2023-05-01' = {
  parent: stg
  name: 'default'
}

resource tables 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' = [
  for name in tableNames: {
    parent: tableService
    name: name
  }
]

// Harvested results are offpath's copy of what Azure OpenAI deletes after
// 14-30 days; keep them for resultsRetentionDays, then let Storage delete
// them. Batch inputs are only needed to resubmit or to audit a job.
resource lifecycle 'Microsoft.Storage/storageAccounts/managementPolicies@2023-05-01' = {
  parent: stg
  name: 'default'
  properties: {
    policy: {
      rules: [
        {
          name: 'expire-batch-results'
          enabled: true
          type: 'Lifecycle'
          definition: {
            filters: {
              blobTypes: [
                'blockBlob'
              ]
              prefixMatch: [
                'batch-results/'
              ]
            }
            actions: {
              baseBlob: {
                delete: {
                  daysAfterModificationGreaterThan: resultsRetentionDays
                }
              }
            }
          }
        }
        {
          name: 'expire-batch-inputs'
          enabled: true
          type: 'Lifecycle'
          definition: {
            filters: {
              blobTypes: [
                'blockBlob'
              ]
              prefixMatch: [
                'batch-inputs/'
              ]
            }
            actions: {
              baseBlob: {
                delete: {
                  daysAfterModificationGreaterThan: batchInputsRetentionDays
                }
              }
            }
          }
        }
      ]
    }
  }
  dependsOn: [
    containers
  ]
}

// The Flex blob trigger is fed by Event Grid. The topic is created here; its
// subscription needs the app's blobs_extension key, which exists only once
// the code is deployed, so the postdeploy hook creates it
// (hooks/postdeploy-eventgrid.sh).
resource systemTopic 'Microsoft.EventGrid/systemTopics@2022-06-15' = {
  name: systemTopicName
  location: location
  tags: tags
  properties: {
    source: stg.id
    topicType: 'Microsoft.Storage.StorageAccounts'
  }
}

output name string = stg.name
output deploymentContainerName string = deploymentContainerName
output blobServiceUri string = 'https://${stg.name}.blob.${environment().suffixes.storage}'
output queueServiceUri string = 'https://${stg.name}.queue.${environment().suffixes.storage}'
output tableServiceUri string = 'https://${stg.name}.table.${environment().suffixes.storage}'
output systemTopicName string = systemTopic.name
