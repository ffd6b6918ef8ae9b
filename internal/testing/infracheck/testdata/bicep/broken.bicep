// A deliberately broken Bicep file: the syntax check must reject it.
resource sb 'Microsoft.ServiceBus/namespaces@2024-01-01' = {
  name: 'sb'
  properties: {
    disableLocalAuth: true
  
}
