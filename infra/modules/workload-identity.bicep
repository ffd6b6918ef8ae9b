// Federated identity credentials that let Kubernetes service accounts on the
// existing AKS cluster act as offpath's identities:
//   - the worker pods' service account as the app identity;
//   - kube-system/keda-operator as the KEDA identity: with the AKS add-on the
//     KEDA operator fetches the scaler's token itself, so the identity named
//     in the TriggerAuthentication's identityId must trust the operator.
// Created one after the other (dependsOn): concurrent credential writes are
// rejected when they hit one identity, and serial costs nothing here.

param appIdentityName string
param kedaIdentityName string

@description('The AKS cluster\'s OIDC issuer URL (oidcIssuerProfile.issuerURL).')
param oidcIssuerURL string

@description('system:serviceaccount:<namespace>:<service account> of the workers.')
param workerSubject string

var audiences = [
  'api://AzureADTokenExchange'
]

resource appIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' existing = {
  name: appIdentityName
}

resource kedaIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' existing = {
  name: kedaIdentityName
}

resource worker 'Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials@2023-01-31' = {
  parent: appIdentity
  name: 'offpath-ingest-heavy'
  properties: {
    issuer: oidcIssuerURL
    subject: workerSubject
    audiences: audiences
  }
}

resource kedaOperator 'Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials@2023-01-31' = {
  parent: kedaIdentity
  name: 'keda-operator'
  properties: {
    issuer: oidcIssuerURL
    subject: 'system:serviceaccount:kube-system:keda-operator'
    audiences: audiences
  }
  dependsOn: [
    worker
  ]
}
