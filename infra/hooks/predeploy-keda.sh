#!/bin/sh
# azd predeploy hook of the AKS worker service (azd has set the kubectl
# context by now). KEDA's operator authenticates to Service Bus with workload
# identity; the workload-identity webhook injects its AZURE_* variables only
# into pods created after workload identity was enabled. If the running
# keda-operator pod lacks AZURE_FEDERATED_TOKEN_FILE, restart it once.
set -eu

pod=$(kubectl get pods -n kube-system -o name | grep '^pod/keda-operator-' | grep -v metrics | head -n 1 || true)
if [ -z "$pod" ]; then
	echo "no keda-operator pod in kube-system: is the KEDA add-on enabled? (az aks update --enable-keda)" >&2
	exit 1
fi
envs=$(kubectl get -n kube-system "$pod" -o jsonpath='{.spec.containers[*].env[*].name}')
case " $envs " in
*" AZURE_FEDERATED_TOKEN_FILE "*)
	echo "$pod has workload identity"
	;;
*)
	echo "$pod has no AZURE_FEDERATED_TOKEN_FILE: restarting keda-operator"
	kubectl rollout restart deployment keda-operator -n kube-system
	kubectl rollout status deployment keda-operator -n kube-system --timeout=180s
	;;
esac
