// offpath: everything one environment needs, at subscription scope so that
// `azd up` (or `az deployment sub create`) creates the resource group too.
// Modules under modules/ hold one concern each; this file only names things
// and wires them. The AKS cluster is not created here: offpath's heavy
// ingestion runs on the cluster the platform team already operates, which
// must have the OIDC issuer, workload identity and the KEDA add-on enabled,
// in that order (see README.md, "Order of operations").
targetScope = 'subscription'

@minLength(1)
@maxLength(32)
@description('Name of the azd environment; names the resource group and seeds every resource name.')
param environmentName string

@minLength(1)
@description('Region for every resource (Flex Consumption and Global Batch must both be offered there).')
param location string

@allowed([
  'FlexConsumption'
  'ElasticPremium'
])
@description('FlexConsumption (default, scale to zero) or ElasticPremium (always-warm EP1, classic app settings).')
param hostingPlan string = 'FlexConsumption'

@description('Flex runtime name. The custom-handler stack is custom/1.0; if ARM refuses it, use dotnet-isolated/8.0: the host still starts the handler because host.json has customHandler.')
param flexRuntimeName string = 'custom'

@description('Flex runtime version, paired with flexRuntimeName.')
param flexRuntimeVersion string = '1.0'

@minValue(40)
@maxValue(1000)
@description('Flex: the most instances the app may scale to.')
param maximumInstanceCount int = 40

@allowed([
  512
  2048
  4096
])
@description('Flex: memory of one instance, in MB.')
param instanceMemoryMB int = 2048

@minLength(1)
@description('Name of the existing AKS cluster that runs the heavy-ingestion workers.')
param aksClusterName string

@minLength(1)
@description('Resource group of the existing AKS cluster.')
param aksResourceGroupName string

@description('Kubernetes namespace of the workers (azure.yaml k8s.namespace must match).')
param workerNamespace string = 'offpath'

@description('Kubernetes service account of the workers (infra/k8s/serviceaccount.yaml must match).')
param workerServiceAccountName string = 'offpath-ingest-heavy'

@minValue(1)
@description('Days a harvested batch result stays in batch-results before the lifecycle rule deletes it.')
param resultsRetentionDays int = 90

@minValue(1)
@description('Days a batch input file (JSONL) stays in batch-inputs.')
param batchInputsRetentionDays int = 30

@description('Where alerts are mailed; empty creates the action group without receivers.')
param alertEmail string = ''

@minValue(1)
@description('Service Bus messages one Functions instance processes at once (written by `offpath sizing`).')
param serviceBusMaxConcurrentCalls int = 4

@minValue(0)
@description('Azure OpenAI tokens per minute one Functions instance may spend; 0 leaves the client-side limiter off (written by `offpath sizing`).')
param aoaiTokensPerMinutePerInstance int = 4000

@minValue(0)
@description('Azure OpenAI requests per minute one Functions instance may send; 0 leaves the client-side limiter off (written by `offpath sizing`).')
param aoaiRequestsPerMinutePerInstance int = 24

@description('SHA-256 (hex) of the admin API key (the key itself is never deployed); empty: the admin API refuses every request.')
param adminKeySha256 string = ''

@description('Entra ID tokens for tenants: comma-separated issuers; empty: API keys only.')
param entraIssuers string = ''

@description('Entra ID tokens for tenants: comma-separated audiences.')
param entraAudiences string = ''

@description('Entra ID tokens for tenants: the JWKS URL, e.g. https://login.microsoftonline.com/<directory id>/discovery/v2.0/keys.')
param entraJwksUrl string = ''

@description('Entra ID tokens for tenants: comma-separated app roles of which an application token must carry one; empty: the token must say idtyp=app (add the idtyp optional claim to the app registration).')
param entraRoles string = ''

@allowed([
  'Enabled'
  'Disabled'
])
@description('Public network access of Storage, Service Bus and Azure OpenAI. Disabled needs private endpoints, which this template does not create.')
param publicNetworkAccess string = 'Enabled'

// The Azure OpenAI deployments, created one after the other. Their names
// are the deployment names in models.json.
var modelDeployments = loadJsonContent('model-deployments.json')

// The online deployments' whole quotas (OFFPATH_AOAI_LIMITS): every running
// instance of the Function App and of the AKS workers shares them through
// leases in Table Storage, however many run.
var aoaiQuotas = string(toObject(filter(modelDeployments, d => d.use == 'queue'), d => d.name, d => {
  tpm: d.capacity * 1000
  rpm: d.capacity * d.rpmPerThousandTpm
}))

var token = toLower(uniqueString(subscription().id, environmentName, location))
var tags = {
  'azd-env-name': environmentName
  application: 'offpath'
}
var names = {
  resourceGroup: 'rg-${environmentName}'
  appIdentity: 'id-offpath-${token}'
  kedaIdentity: 'id-offpath-keda-${token}'
  storage: 'stoffpath${token}'
  serviceBus: 'sb-offpath-${token}'
  openAI: 'oai-offpath-${token}'
  logAnalytics: 'log-offpath-${token}'
  appInsights: 'appi-offpath-${token}'
  plan: 'plan-offpath-${token}'
  functionApp: 'func-offpath-${token}'
  registry: 'croffpath${token}'
  systemTopic: 'evgt-offpath-${token}'
  actionGroup: 'ag-offpath-${token}'
}
var heavyFunction = 'ingest-process-heavy'

resource rg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: names.resourceGroup
  location: location
  tags: tags
}

resource aks 'Microsoft.ContainerService/managedClusters@2024-09-01' existing = {
  name: aksClusterName
  scope: resourceGroup(aksResourceGroupName)
}

module identity 'modules/identity.bicep' = {
  name: 'identity'
  scope: rg
  params: {
    location: location
    tags: tags
    appIdentityName: names.appIdentity
    kedaIdentityName: names.kedaIdentity
  }
}

module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  scope: rg
  params: {
    location: location
    tags: tags
    logAnalyticsName: names.logAnalytics
    appInsightsName: names.appInsights
  }
}

module storage 'modules/storage.bicep' = {
  name: 'storage'
  scope: rg
  params: {
    location: location
    tags: tags
    storageName: names.storage
    systemTopicName: names.systemTopic
    resultsRetentionDays: resultsRetentionDays
    batchInputsRetentionDays: batchInputsRetentionDays
    publicNetworkAccess: publicNetworkAccess
  }
}

module serviceBus 'modules/servicebus.bicep' = {
  name: 'servicebus'
  scope: rg
  params: {
    location: location
    tags: tags
    namespaceName: names.serviceBus
    publicNetworkAccess: publicNetworkAccess
  }
}

module openAI 'modules/openai.bicep' = {
  name: 'openai'
  scope: rg
  params: {
    location: location
    tags: tags
    accountName: names.openAI
    deployments: modelDeployments
    publicNetworkAccess: publicNetworkAccess
  }
}

module rbac 'modules/rbac.bicep' = {
  name: 'rbac'
  scope: rg
  params: {
    storageName: storage.outputs.name
    serviceBusName: serviceBus.outputs.name
    lightQueueName: serviceBus.outputs.lightQueueName
    heavyQueueName: serviceBus.outputs.heavyQueueName
    openAIName: openAI.outputs.name
    appInsightsName: monitoring.outputs.appInsightsName
    appPrincipalId: identity.outputs.appPrincipalId
    kedaPrincipalId: identity.outputs.kedaPrincipalId
  }
}

module registry 'modules/registry.bicep' = {
  name: 'registry'
  scope: rg
  params: {
    location: location
    tags: tags
    registryName: names.registry
    // Clusters that run as a service principal have no identityProfile
    // (or no kubeletidentity in it): the registry module then assigns no
    // role, and the cluster is attached with `az aks update --attach-acr`.
    // Nested conditions, not &&: ARM evaluates only the branch a condition
    // picks, but both operands of an and().
    kubeletObjectId: contains(aks.properties, 'identityProfile') ? (contains(aks.properties.identityProfile, 'kubeletidentity') ? aks.properties.identityProfile.kubeletidentity.objectId : '') : ''
  }
}

module workloadIdentity 'modules/workload-identity.bicep' = {
  name: 'workload-identity'
  scope: rg
  params: {
    appIdentityName: identity.outputs.appName
    kedaIdentityName: identity.outputs.kedaName
    oidcIssuerURL: aks.properties.oidcIssuerProfile.issuerURL
    workerSubject: 'system:serviceaccount:${workerNamespace}:${workerServiceAccountName}'
  }
}

module functionApp 'modules/functionapp.bicep' = {
  name: 'functionapp'
  scope: rg
  dependsOn: [
    rbac
  ]
  params: {
    location: location
    tags: tags
    hostingPlan: hostingPlan
    planName: names.plan
    appName: names.functionApp
    flexRuntimeName: flexRuntimeName
    flexRuntimeVersion: flexRuntimeVersion
    maximumInstanceCount: maximumInstanceCount
    instanceMemoryMB: instanceMemoryMB
    identityId: identity.outputs.appId
    identityClientId: identity.outputs.appClientId
    storageName: storage.outputs.name
    deploymentContainerName: storage.outputs.deploymentContainerName
    serviceBusNamespace: serviceBus.outputs.fullyQualifiedNamespace
    openAIEndpoint: openAI.outputs.endpoint
    openAIId: openAI.outputs.id
    appInsightsConnectionString: monitoring.outputs.appInsightsConnectionString
    serviceBusMaxConcurrentCalls: serviceBusMaxConcurrentCalls
    aoaiTokensPerMinutePerInstance: aoaiTokensPerMinutePerInstance
    aoaiRequestsPerMinutePerInstance: aoaiRequestsPerMinutePerInstance
    aoaiQuotas: aoaiQuotas
    adminKeySha256: adminKeySha256
    entraIssuers: entraIssuers
    entraAudiences: entraAudiences
    entraJwksUrl: entraJwksUrl
    entraRoles: entraRoles
  }
}

module alerts 'modules/alerts.bicep' = {
  name: 'alerts'
  scope: rg
  params: {
    location: location
    tags: tags
    actionGroupName: names.actionGroup
    alertEmail: alertEmail
    logAnalyticsId: monitoring.outputs.logAnalyticsId
    serviceBusId: serviceBus.outputs.id
  }
}

// Outputs become azd environment values: the hooks and the Kubernetes
// manifests (${NAME} placeholders, substituted by azd) read them.
output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_AKS_CLUSTER_NAME string = aksClusterName
output AZURE_AKS_RESOURCE_GROUP string = aksResourceGroupName
output AZURE_CONTAINER_REGISTRY_ENDPOINT string = registry.outputs.loginServer
// false: the cluster has no managed kubelet identity; run `az aks update
// --attach-acr` once (infra/README.md) or the workers cannot pull.
output OFFPATH_KUBELET_CAN_PULL bool = registry.outputs.kubeletCanPull
output OFFPATH_FUNCTION_APP_NAME string = functionApp.outputs.name
output OFFPATH_FUNCTION_APP_HOSTNAME string = functionApp.outputs.defaultHostName
output OFFPATH_EVENTGRID_TOPIC string = storage.outputs.systemTopicName
output OFFPATH_STORAGE_ACCOUNT string = storage.outputs.name
output OFFPATH_BLOB_SERVICE_URI string = storage.outputs.blobServiceUri
output OFFPATH_QUEUE_SERVICE_URI string = storage.outputs.queueServiceUri
output OFFPATH_TABLE_SERVICE_URI string = storage.outputs.tableServiceUri
output OFFPATH_SERVICEBUS_NAMESPACE string = serviceBus.outputs.name
output OFFPATH_SERVICEBUS_FQDN string = serviceBus.outputs.fullyQualifiedNamespace
output OFFPATH_AOAI_ENDPOINT string = openAI.outputs.endpoint
output OFFPATH_AOAI_LIMITS string = aoaiQuotas
output OFFPATH_APP_CLIENT_ID string = identity.outputs.appClientId
output OFFPATH_KEDA_CLIENT_ID string = identity.outputs.kedaClientId
output OFFPATH_WORKER_NAMESPACE string = workerNamespace
output OFFPATH_WORKER_SERVICE_ACCOUNT string = workerServiceAccountName
output OFFPATH_HEAVY_FUNCTION string = heavyFunction
output APPLICATIONINSIGHTS_CONNECTION_STRING string = monitoring.outputs.appInsightsConnectionString
