// The Azure OpenAI account and its model deployments. Key authentication is
// disabled, so the only doors are Entra identities that offpath controls;
// a batch that appears without offpath having submitted it is then a
// "second door" worth an alert, not a leaked key. The custom subdomain is
// required: Global Batch does not work on accounts whose endpoint is not
// https://<name>.openai.azure.com.

param location string
param tags object
param accountName string

@description('Deployments from model-deployments.json: name, model, version, sku (GlobalStandard, Standard, GlobalBatch, ...), capacity.')
param deployments array

@allowed([
  'Enabled'
  'Disabled'
])
param publicNetworkAccess string

resource aoai 'Microsoft.CognitiveServices/accounts@2024-10-01' = {
  name: accountName
  location: location
  tags: tags
  kind: 'OpenAI'
  sku: {
    name: 'S0'
  }
  properties: {
    customSubDomainName: accountName
    disableLocalAuth: true
    publicNetworkAccess: publicNetworkAccess
  }
}

// One at a time: an account accepts one deployment write at a time, and the
// GlobalBatch deployment comes last in model-deployments.json. capacity is
// in units of 1,000 TPM for online SKUs; for GlobalBatch it is the
// enqueued-token quota, whose unit must be checked in the subscription
// (`az cognitiveservices usage list`) before relying on a number.
@batchSize(1)
resource modelDeployments 'Microsoft.CognitiveServices/accounts/deployments@2024-10-01' = [
  for d in deployments: {
    parent: aoai
    name: d.name
    sku: {
      name: d.sku
      capacity: d.capacity
    }
    properties: {
      model: {
        format: 'OpenAI'
        name: d.model
        version: d.version
      }
      versionUpgradeOption: 'OnceCurrentVersionExpired'
    }
  }
]

output name string = aoai.name
output id string = aoai.id
output endpoint string = 'https://${accountName}.openai.azure.com'
