// Every role assignment of offpath's two identities, each at the narrowest
// scope that works. Role definition ids are Azure's built-in GUIDs.
//
// App identity (Function App and AKS workers):
//   Storage Blob Data Owner          account  host storage (keys, timer locks, blob receipts) and offpath's containers
//   Storage Queue Data Contributor   account  the host's queues (blob-trigger poison queue, internal work items)
//   Storage Table Data Contributor   account  tenants, jobs, documents, ledger
//   Azure Service Bus Data Sender    queues   ingest-enqueue sends claim checks to both queues
//   Azure Service Bus Data Receiver  queues   ingest-process and ingest-process-heavy receive them
//   Azure Service Bus Data Owner     doc-ingest only, when appQueueOwnerForScaling: the Flex scale
//                                    controller reads the queue's runtime properties with the app's
//                                    connection, which (like KEDA) needs the Manage claim
//   Cognitive Services OpenAI User   account  chat, embeddings, files and batches
//   Monitoring Reader                account  the reconciliation reads the account's token metrics
//   Monitoring Metrics Publisher     App Insights  telemetry with local auth disabled
// KEDA identity:
//   Azure Service Bus Data Owner     doc-ingest-heavy only: the scaler reads the queue's runtime
//                                    properties (an administration call, needs Manage)

param storageName string
param serviceBusName string
param lightQueueName string
param heavyQueueName string
param openAIName string
param appInsightsName string
param appPrincipalId string
param kedaPrincipalId string

@description('Give the app identity Data Owner on doc-ingest so that the Flex scale controller can count its messages. See README.md, "Known uncertainties".')
param appQueueOwnerForScaling bool = true

var roles = {
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  serviceBusDataSender: '69a216fc-b8fb-44d8-bc22-1f3c2cd27a39'
  serviceBusDataReceiver: '4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0'
  serviceBusDataOwner: '090c5cfd-751d-490a-894a-3ce6f1109419'
  cognitiveServicesOpenAIUser: '5e0bd9bd-7b93-4f28-af87-19fc36ad61bd'
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
  monitoringReader: '43d0d8ad-25c7-4714-9337-8ba259a9fe05'
}

resource stg 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageName
}

resource sb 'Microsoft.ServiceBus/namespaces@2024-01-01' existing = {
  name: serviceBusName
}

resource light 'Microsoft.ServiceBus/namespaces/queues@2024-01-01' existing = {
  parent: sb
  name: lightQueueName
}

resource heavy 'Microsoft.ServiceBus/namespaces/queues@2024-01-01' existing = {
  parent: sb
  name: heavyQueueName
}

resource aoai 'Microsoft.CognitiveServices/accounts@2024-10-01' existing = {
  name: openAIName
}

resource appi 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

var storageRoles = [
  roles.storageBlobDataOwner
  roles.storageQueueDataContributor
  roles.storageTableDataContributor
]

resource appStorage 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for role in storageRoles: {
    name: guid(stg.id, appPrincipalId, role)
    scope: stg
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role)
      principalId: appPrincipalId
      principalType: 'ServicePrincipal'
    }
  }
]

var queueRoles = [
  roles.serviceBusDataSender
  roles.serviceBusDataReceiver
]

resource appLight 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for role in queueRoles: {
    name: guid(light.id, appPrincipalId, role)
    scope: light
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role)
      principalId: appPrincipalId
      principalType: 'ServicePrincipal'
    }
  }
]

resource appHeavy 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for role in queueRoles: {
    name: guid(heavy.id, appPrincipalId, role)
    scope: heavy
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role)
      principalId: appPrincipalId
      principalType: 'ServicePrincipal'
    }
  }
]

resource appLightScale 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (appQueueOwnerForScaling) {
  name: guid(light.id, appPrincipalId, roles.serviceBusDataOwner)
  scope: light
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.serviceBusDataOwner)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource appOpenAI 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(aoai.id, appPrincipalId, roles.cognitiveServicesOpenAIUser)
  scope: aoai
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.cognitiveServicesOpenAIUser)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource appMetricsReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(aoai.id, appPrincipalId, roles.monitoringReader)
  scope: aoai
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.monitoringReader)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource appTelemetry 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(appi.id, appPrincipalId, roles.monitoringMetricsPublisher)
  scope: appi
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.monitoringMetricsPublisher)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource kedaHeavy 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(heavy.id, kedaPrincipalId, roles.serviceBusDataOwner)
  scope: heavy
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.serviceBusDataOwner)
    principalId: kedaPrincipalId
    principalType: 'ServicePrincipal'
  }
}
