# offpath — the two commands: `make run` and `make test`. Both install what
# they need (Go modules through the module proxy, the pinned npm packages).

GO      ?= go
APP     := build/app
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
NPM_STAMP := node_modules/.installed

.PHONY: all app run demo-rescore run-aoaisim test vet bench clean deps

all: app

# Pinned Azurite (package-lock.json), installed exactly.
deps: $(NPM_STAMP)
	$(GO) mod download

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The deployable app folder: host.json, one folder per function with its
# function.json, and the linux/amd64 handler with its execute bit. The real
# Functions host (or `func start` inside it) runs it as is.
#
# BLOB_TRIGGER_SOURCE picks the ingest-enqueue blob trigger's source:
# EventGrid (the default, what functions/ holds and the infra deploys: Flex
# Consumption supports no other), or LogsAndContainerScan, the polling
# trigger, for Elastic Premium or `func start` without an Event Grid
# subscription. The dev host scans the container either way.
BLOB_TRIGGER_SOURCE ?= EventGrid
app:
	rm -rf $(APP)
	mkdir -p $(APP)
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath \
		-ldflags "-s -w -X main.version=$(VERSION)" -o $(APP)/handler ./cmd/handler
	chmod 0755 $(APP)/handler
	cp host.json models.json $(APP)/
	cp -R functions/. $(APP)/
	sed 's/"source": "EventGrid"/"source": "$(BLOB_TRIGGER_SOURCE)"/' functions/ingest-enqueue/function.json > $(APP)/ingest-enqueue/function.json
	@echo "app folder ready: $(APP) ($$(ls -d $(APP)/*/ | wc -l) functions)"

# The whole system on this machine: Azurite, the Azure OpenAI simulator and
# the dev host running the app. Ctrl-C stops it. PORT=… picks the dev host's
# port (default 7071, or a free one when 7071 is busy); VERBOSE=1 shows the
# handler's and the dev host's logs (always in .run/logs/) on the console.
PORT    ?=
VERBOSE ?=
run: deps app
	$(GO) run ./cmd/devstack -app $(APP) $(if $(PORT),-port $(PORT)) $(if $(VERBOSE),-verbose)

# The README's re-scoring and cancel example, for real, against the stack
# make run started (in another terminal): reads its coordinates from .run/env.
demo-rescore:
	$(GO) run ./cmd/devstack rescore -env .run/env

# The Azure OpenAI simulator alone, on a fixed port (key aoaisim-key).
run-aoaisim:
	$(GO) run ./cmd/aoaisim -config cmd/aoaisim/deployments.example.json -addr 127.0.0.1:4141

vet: deps
	$(GO) vet ./...

# vet, unit tests and the integration tests against Azurite (each test
# package starts its own), with the race detector. Headless Chromium (Debian's
# package, installed when missing) renders the morning report in its test
# and runs the console page, driven by playwright-core, in another.
test: deps
	./scripts/ensure-chromium
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 15m ./...

# Benchmarks whose numbers the README reports. Not part of `make test`.
# Each benchmark that claims a ratio runs its baseline in the same run and
# prints it beside the figure.
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./internal/invoke/
	$(GO) test -run '^$$' -bench Coldstart -benchtime 20x -count 3 ./cmd/handler/
	$(GO) test -run '^$$' -bench ChatCompletions -benchtime 3s ./internal/local/aoaisim/
	$(GO) test -run '^$$' -bench BatchLarge -benchtime 1x -timeout 20m ./internal/local/aoaisim/
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x ./internal/batchfile/
	$(GO) test -run '^$$' -bench WriteUpload100k -benchtime 3x ./internal/azopenai/
	$(GO) test -run '^$$' -bench Authenticate -benchmem -count 3 ./internal/auth/
	$(GO) test -run '^$$' -bench Ledger -benchtime 3x -count 1 -timeout 30m ./internal/tablestore/
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x -count 3 ./internal/report/
	$(GO) test -run '^$$' -bench Parse -benchmem -count 5 ./internal/tickets/
	$(GO) test -run '^$$' -bench Collect -benchmem -benchtime 1x -count 3 -timeout 30m ./internal/tickets/
	$(GO) test -run '^$$' -bench Night -benchtime 2x -timeout 30m ./internal/nightly/
	$(GO) test -run '^$$' -bench Pipeline -benchtime 3x ./internal/extract/
	$(GO) test -run '^$$' -bench QuotaAdherence -benchtime 1x ./internal/azopenai/
	$(GO) test -run '^$$' -bench FleetQuota -benchtime 1x -timeout 20m ./internal/azopenai/
	$(GO) test -run '^$$' -bench Client -benchtime 3s ./internal/azopenai/
	$(GO) test -run '^$$' -bench 'Upload150MB$$' -benchtime 1x -count 2 ./internal/openaiapi/
	$(GO) test -run '^$$' -bench Upload150MBHandler -benchtime 1x ./internal/openaiapi/
	$(GO) test -run '^$$' -bench ItemLine -benchmem -count 3 ./internal/batch/
	$(GO) test -run '^$$' -bench 'Submit$$' -benchtime 2x -timeout 40m ./internal/batch/
	$(GO) test -run '^$$' -bench 'Harvest$$' -benchtime 2x -timeout 40m ./internal/batch/
	$(GO) test -run '^$$' -bench PollTick -benchtime 2x -timeout 40m ./internal/batch/
	$(GO) test -run '^$$' -bench Retarget -benchtime 1x -count 2 -timeout 20m ./internal/batch/
	$(GO) test -run '^$$' -bench Spread -benchtime 1x -timeout 20m ./internal/batch/
	$(GO) test -run '^$$' -bench 'Process$$' -benchtime 200x -benchmem ./internal/ingest/
	$(GO) test -run '^$$' -bench Process50MB -benchtime 1x -timeout 10m ./internal/ingest/
	$(GO) test -run '^$$' -bench QuotaAdherence -benchtime 1x ./internal/ingest/

clean:
	rm -rf build .run

# Offline checks of infra/ (no Azure, no Bicep compiler, no cluster): the
# Bicep syntax check (tree-sitter-bicep via node), then the Go checks of the
# Kubernetes manifests (against KEDA's CRDs, which the test fetches as the Go
# module github.com/kedacore/keda/v2 through the module proxy, or finds in the
# module cache), the Bicep text, the functions and the azd wiring
# (internal/testing/infracheck) and the sizing formulas. `make test` runs the same Go
# tests through ./...
.PHONY: lint-infra
lint-infra: deps
	node infra/scripts/check-bicep.mjs infra
	$(GO) test -count=1 ./internal/testing/infracheck/ ./internal/sizing/
