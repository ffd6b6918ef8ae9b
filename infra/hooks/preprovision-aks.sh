#!/bin/sh
# azd preprovision hook: the existing AKS cluster must have the OIDC issuer
# and workload identity enabled before the KEDA add-on, or KEDA's operator
# starts without the injected AZURE_* variables and cannot get tokens.
# This hook checks the cluster; with OFFPATH_AKS_CONFIGURE=true it enables
# what is missing, in that order. It never disables anything.
set -eu

: "${AZURE_AKS_CLUSTER_NAME:?set it: azd env set AZURE_AKS_CLUSTER_NAME <cluster>}"
: "${AZURE_AKS_RESOURCE_GROUP:?set it: azd env set AZURE_AKS_RESOURCE_GROUP <resource group>}"
cluster="$AZURE_AKS_CLUSTER_NAME"
group="$AZURE_AKS_RESOURCE_GROUP"
configure="${OFFPATH_AKS_CONFIGURE:-false}"

state() {
	az aks show -g "$group" -n "$cluster" --query "$1" -o tsv 2>/dev/null | tr '[:upper:]' '[:lower:]'
}

oidc=$(state "oidcIssuerProfile.enabled")
wi=$(state "securityProfile.workloadIdentity.enabled")
keda=$(state "workloadAutoScalerProfile.keda.enabled")
echo "AKS $group/$cluster: oidcIssuer=${oidc:-false} workloadIdentity=${wi:-false} keda=${keda:-false}"

if [ "$oidc" != "true" ] || [ "$wi" != "true" ]; then
	if [ "$configure" != "true" ]; then
		echo "The cluster needs the OIDC issuer and workload identity (before KEDA). Run:" >&2
		echo "  az aks update -g $group -n $cluster --enable-oidc-issuer --enable-workload-identity" >&2
		echo "or set OFFPATH_AKS_CONFIGURE=true (azd env set OFFPATH_AKS_CONFIGURE true) and run azd up again." >&2
		exit 1
	fi
	az aks update -g "$group" -n "$cluster" --enable-oidc-issuer --enable-workload-identity
	if [ "$keda" = "true" ]; then
		# KEDA started before workload identity: the predeploy hook of the
		# worker service restarts keda-operator so the webhook injects
		# AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE and AZURE_AUTHORITY_HOST.
		echo "KEDA was enabled before workload identity; keda-operator will be restarted before the workers deploy."
	fi
fi

if [ "$keda" != "true" ]; then
	if [ "$configure" != "true" ]; then
		echo "The cluster needs the KEDA add-on (after workload identity). Run:" >&2
		echo "  az aks update -g $group -n $cluster --enable-keda" >&2
		echo "or set OFFPATH_AKS_CONFIGURE=true and run azd up again." >&2
		exit 1
	fi
	az aks update -g "$group" -n "$cluster" --enable-keda
fi
