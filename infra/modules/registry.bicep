// The container registry for the worker image (azd pushes it, AKS pulls it).
// Admin user off: the cluster's kubelet identity pulls with AcrPull. A
// cluster without a managed kubelet identity (one that runs as a service
// principal) gets no role assignment here: attach the registry to it with
// `az aks update --attach-acr <registry>` (infra/README.md).

param location string
param tags object
param registryName string

@description('Object id of the existing AKS cluster\'s kubelet identity; empty when the cluster has none (service principal clusters).')
param kubeletObjectId string

var acrPull = '7f951dda-4ed3-4680-a7ca-43fe172d538d'

resource acr 'Microsoft.ContainerRegistry/registries@2023-07-01' = {
  name: registryName
  location: location
  tags: tags
  sku: {
    name: 'Basic'
  }
  properties: {
    adminUserEnabled: false
    anonymousPullEnabled: false
  }
}

resource kubeletPull 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(kubeletObjectId)) {
  name: guid(acr.id, kubeletObjectId, acrPull)
  scope: acr
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', acrPull)
    principalId: kubeletObjectId
    principalType: 'ServicePrincipal'
  }
}

output loginServer string = acr.properties.loginServer
output kubeletCanPull bool = !empty(kubeletObjectId)
