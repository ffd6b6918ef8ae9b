// Two user-assigned identities. The app identity is offpath's own: the
// Function App and the AKS workers (through workload identity) run as it.
// The KEDA identity only counts messages on the heavy queue; it is separate
// because counting needs Azure Service Bus Data Owner, which offpath's own
// code must not hold.

param location string
param tags object
param appIdentityName string
param kedaIdentityName string

resource app 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: appIdentityName
  location: location
  tags: tags
}

resource keda 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: kedaIdentityName
  location: location
  tags: tags
}

output appId string = app.id
output appName string = app.name
output appClientId string = app.properties.clientId
output appPrincipalId string = app.properties.principalId
output kedaName string = keda.name
output kedaClientId string = keda.properties.clientId
output kedaPrincipalId string = keda.properties.principalId
