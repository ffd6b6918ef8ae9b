#!/bin/sh
# azd postdeploy hook of the Function App: create (or update) the Event Grid
# subscription of every blob trigger whose function.json says
# "source": "EventGrid". The webhook URL carries the blobs_extension system
# key, which the host creates only once an app with such a trigger has been
# deployed and started, so this cannot be part of the Bicep.
# Needs: az, and the azd environment values AZURE_RESOURCE_GROUP,
# OFFPATH_FUNCTION_APP_NAME, OFFPATH_FUNCTION_APP_HOSTNAME,
# OFFPATH_EVENTGRID_TOPIC.
set -eu

group="${AZURE_RESOURCE_GROUP:?}"
app="${OFFPATH_FUNCTION_APP_NAME:?}"
host="${OFFPATH_FUNCTION_APP_HOSTNAME:?}"
topic="${OFFPATH_EVENTGRID_TOPIC:?}"
functions_dir="${OFFPATH_FUNCTIONS_DIR:-functions}"

found=0
for fj in "$functions_dir"/*/function.json; do
	[ -f "$fj" ] || continue
	grep -q '"source"[[:space:]]*:[[:space:]]*"EventGrid"' "$fj" || continue
	fn=$(basename "$(dirname "$fj")")
	# "path": "<container>/..." on one line (checked by internal/testing/infracheck).
	container=$(sed -n 's/.*"path"[[:space:]]*:[[:space:]]*"\([^/"]*\)\/.*/\1/p' "$fj" | head -n 1)
	if [ -z "$container" ]; then
		echo "$fj: no \"path\": \"<container>/...\"" >&2
		exit 1
	fi
	found=1

	key=""
	for attempt in 1 2 3 4 5 6 7 8 9 10; do
		key=$(az functionapp keys list -g "$group" -n "$app" --query systemKeys.blobs_extension -o tsv 2>/dev/null || true)
		[ -n "$key" ] && break
		echo "waiting for the blobs_extension key (attempt $attempt)..."
		sleep 15
	done
	if [ -z "$key" ]; then
		echo "the app has no blobs_extension system key yet: is the code deployed and the host running?" >&2
		exit 1
	fi

	echo "Event Grid: $topic -> $fn (container $container)"
	az eventgrid system-topic event-subscription create \
		--name "$fn" \
		--resource-group "$group" \
		--system-topic-name "$topic" \
		--endpoint-type webhook \
		--endpoint "https://$host/runtime/webhooks/blobs?functionName=Host.Functions.$fn&code=$key" \
		--included-event-types Microsoft.Storage.BlobCreated \
		--subject-begins-with "/blobServices/default/containers/$container/" \
		--output none
done

if [ "$found" = 0 ]; then
	echo "no EventGrid blob trigger in $functions_dir: nothing to subscribe"
fi
