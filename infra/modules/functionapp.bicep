// The Function App that runs offpath's custom handler, on Flex Consumption
// (default) or Elastic Premium (hostingPlan = 'ElasticPremium'). Every
// connection is identity-based: the app runs as the user-assigned app
// identity, and no setting holds a key or a connection string (the
// Application Insights connection string only locates the component; local
// auth is disabled on it).

param location string
param tags object

@allowed([
  'FlexConsumption'
  'ElasticPremium'
])
param hostingPlan string

param planName string
param appName string
param flexRuntimeName string
param flexRuntimeVersion string
param maximumInstanceCount int
param instanceMemoryMB int
param identityId string
param identityClientId string
param storageName string
param deploymentContainerName string
param serviceBusNamespace string
param openAIEndpoint string
@description('The Azure OpenAI account\'s resource id: the reconciliation reads its Azure Monitor token metrics.')
param openAIId string
param appInsightsConnectionString string
param serviceBusMaxConcurrentCalls int
param aoaiTokensPerMinutePerInstance int
param aoaiRequestsPerMinutePerInstance int
@description('The online deployments\' whole quotas as JSON {"deployment": {"tpm": N, "rpm": N}}, shared by every running instance.')
param aoaiQuotas string

@description('SHA-256 (hex) of the admin API key; empty: the admin API refuses every request.')
param adminKeySha256 string = ''

@description('Entra ID token validation for tenants (comma-separated issuers and audiences, JWKS URL); empty: API keys only.')
param entraIssuers string = ''
param entraAudiences string = ''
param entraJwksUrl string = ''
@description('App roles of which a tenant\'s application token must carry one (comma-separated); empty: idtyp=app is required instead.')
param entraRoles string = ''

@description('Elastic Premium: the most instances the plan may scale to.')
param elasticMaximumWorkerCount int = 20

var isFlex = hostingPlan == 'FlexConsumption'
var storageSuffix = environment().suffixes.storage

// Settings for both plans. On Flex these are all there is: Flex takes the
// runtime from functionAppConfig.runtime and rejects FUNCTIONS_WORKER_RUNTIME,
// FUNCTIONS_EXTENSION_VERSION, WEBSITE_RUN_FROM_PACKAGE and the content-share
// settings.
var flexAppSettings = {
  // Host storage and the blob trigger (connection "AzureWebJobsStorage"):
  // a blob trigger needs the queue service too (poison blobs).
  AzureWebJobsStorage__blobServiceUri: 'https://${storageName}.blob.${storageSuffix}'
  AzureWebJobsStorage__queueServiceUri: 'https://${storageName}.queue.${storageSuffix}'
  AzureWebJobsStorage__tableServiceUri: 'https://${storageName}.table.${storageSuffix}'
  AzureWebJobsStorage__credential: 'managedidentity'
  AzureWebJobsStorage__clientId: identityClientId
  // Service Bus triggers and outputs (connection "ServiceBus").
  ServiceBus__fullyQualifiedNamespace: serviceBusNamespace
  ServiceBus__credential: 'managedidentity'
  ServiceBus__clientId: identityClientId
  // Telemetry with Entra authentication.
  APPLICATIONINSIGHTS_CONNECTION_STRING: appInsightsConnectionString
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=${identityClientId};Authorization=AAD'
  // The handler's own clients: azidentity picks the user-assigned identity
  // from AZURE_CLIENT_ID; the Azure OpenAI endpoint is its custom subdomain.
  AZURE_CLIENT_ID: identityClientId
  OFFPATH_AOAI_ENDPOINT: openAIEndpoint
  OFFPATH_AOAI_RESOURCE_ID: openAIId
  // The batch-poll timer's NCRONTAB schedule (functions/batch-poll): every
  // minute, Azure's advice for polling a batch.
  OFFPATH_BATCH_POLL_SCHEDULE: '0 */1 * * * *'
  // The nightly ticket summaries collect the previous UTC day's tickets at
  // 01:00, 02:00 and 03:00 UTC (the first run that succeeds submits; the
  // others find the day done); the morning report must exist by 07:00 UTC;
  // the second-door audit runs hourly. All NCRONTAB, UTC.
  OFFPATH_TICKETS_SCHEDULE: '0 0 1-3 * * *'
  OFFPATH_REPORT_DEADLINE_SCHEDULE: '0 0 7 * * *'
  OFFPATH_AUDIT_SCHEDULE: '0 15 * * * *'
  // The functions this app runs: every one but ingest-process-heavy, which
  // runs on AKS only (infra/k8s/deployment.yaml). The host's "functions"
  // allow-list (host.json, here overridden per index), not
  // AzureWebJobs.<name>.Disabled: an app-setting name may hold only
  // letters, digits, periods and underscores, so the hyphenated
  // "AzureWebJobs.ingest-process-heavy.Disabled" is not a setting Linux
  // apps can carry (Azure/Azure-Functions#1851). A function left out of the
  // list is not loaded, has no trigger registered with the platform and
  // scales nothing. Add a new function here (internal/testing/infracheck fails
  // until it runs somewhere).
  AzureFunctionsJobHost__functions__0: 'api'
  AzureFunctionsJobHost__functions__1: 'batch-audit'
  AzureFunctionsJobHost__functions__2: 'batch-poll'
  AzureFunctionsJobHost__functions__3: 'ingest-enqueue'
  AzureFunctionsJobHost__functions__4: 'ingest-process'
  AzureFunctionsJobHost__functions__5: 'nightly-summaries'
  AzureFunctionsJobHost__functions__6: 'openai'
  AzureFunctionsJobHost__functions__7: 'reconcile'
  AzureFunctionsJobHost__functions__8: 'report-deadline'
  AzureFunctionsJobHost__functions__9: 'webhook-deliver'
  // Tenant webhooks are found and delivered every 30 seconds, in their own
  // function, never in the poll tick.
  OFFPATH_WEBHOOK_SCHEDULE: '*/30 * * * * *'
  // The host refuses request bodies over 100 MB unless told otherwise;
  // the OpenAI-compatible door takes batch input files of up to 1 GiB
  // (multipart, so a MiB more). The front end's 230-second limit on an
  // HTTP request still bounds what a slow link can upload.
  FUNCTIONS_REQUEST_BODY_SIZE_LIMIT: '1074790400'
  // The deployments' whole quotas, shared by every running instance (and
  // the AKS workers) through leases in Table Storage; the most instances
  // that may run, which divides them for the static fallback share.
  OFFPATH_AOAI_LIMITS: aoaiQuotas
  OFFPATH_AOAI_INSTANCES: string(maximumInstanceCount)
  // The reconciliation compares each hour with Azure Monitor once its
  // metrics are final (20 minutes after it ends).
  OFFPATH_RECONCILE_SCHEDULE: '0 25 * * * *'
  // Each queue's maxDeliveryCount (servicebus.bicep), so that a transient
  // failure on a message's last delivery is recorded dead_lettered.
  OFFPATH_INGEST_MAX_DELIVERY_COUNT: '5'
  OFFPATH_INGEST_HEAVY_MAX_DELIVERY_COUNT: '8'
  // Sizing (written by `offpath sizing`): messages in flight per instance,
  // and the static share of the chat deployment's quota one instance falls
  // back to while the lease store cannot be reached.
  AzureFunctionsJobHost__extensions__serviceBus__maxConcurrentCalls: string(serviceBusMaxConcurrentCalls)
  OFFPATH_AOAI_TPM_BUDGET: string(aoaiTokensPerMinutePerInstance)
  OFFPATH_AOAI_RPM_BUDGET: string(aoaiRequestsPerMinutePerInstance)
  // Tenancy (internal/config): tenants and the ledger use the
  // AzureWebJobsStorage table endpoint above; the admin key is stored
  // only as its hash.
  OFFPATH_ADMIN_KEY_SHA256: adminKeySha256
  OFFPATH_ENTRA_ISSUERS: entraIssuers
  OFFPATH_ENTRA_AUDIENCES: entraAudiences
  OFFPATH_ENTRA_JWKS_URL: entraJwksUrl
  OFFPATH_ENTRA_ROLES: entraRoles
}

// Elastic Premium runs the classic way: the worker runtime comes from app
// settings. No Azure Files content share: its setting would be a connection
// string with the account key, and shared-key access is off.
var elasticPremiumOnlySettings = {
  FUNCTIONS_WORKER_RUNTIME: 'custom'
  FUNCTIONS_EXTENSION_VERSION: '~4'
}

var flexPlanSku = {
  name: 'FC1'
  tier: 'FlexConsumption'
}
var elasticPremiumPlanSku = {
  name: 'EP1'
  tier: 'ElasticPremium'
}
var flexPlanProperties = {
  reserved: true
}
var elasticPremiumPlanProperties = {
  reserved: true
  maximumElasticWorkerCount: elasticMaximumWorkerCount
}

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: planName
  location: location
  tags: tags
  kind: isFlex ? 'functionapp' : 'elastic'
  sku: isFlex ? flexPlanSku : elasticPremiumPlanSku
  properties: isFlex ? flexPlanProperties : elasticPremiumPlanProperties
}

var flexProperties = {
  functionAppConfig: {
    deployment: {
      storage: {
        type: 'blobContainer'
        value: 'https://${storageName}.blob.${storageSuffix}/${deploymentContainerName}'
        authentication: {
          type: 'UserAssignedIdentity'
          userAssignedIdentityResourceId: identityId
        }
      }
    }
    scaleAndConcurrency: {
      maximumInstanceCount: maximumInstanceCount
      instanceMemoryMB: instanceMemoryMB
    }
    runtime: {
      name: flexRuntimeName
      version: flexRuntimeVersion
    }
  }
  siteConfig: {
    minTlsVersion: '1.2'
  }
}

var elasticPremiumProperties = {
  siteConfig: {
    minTlsVersion: '1.2'
    ftpsState: 'Disabled'
    preWarmedInstanceCount: 1
  }
}

var commonSiteProperties = {
  serverFarmId: plan.id
  httpsOnly: true
  reserved: true
}

resource app 'Microsoft.Web/sites@2024-04-01' = {
  name: appName
  location: location
  tags: union(tags, {
    'azd-service-name': 'api'
  })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identityId}': {}
    }
  }
  properties: union(commonSiteProperties, isFlex ? flexProperties : elasticPremiumProperties)
}

resource appSettings 'Microsoft.Web/sites/config@2024-04-01' = {
  parent: app
  name: 'appsettings'
  properties: isFlex ? flexAppSettings : union(flexAppSettings, elasticPremiumOnlySettings)
}

output name string = app.name
output defaultHostName string = app.properties.defaultHostName
