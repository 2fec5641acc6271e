# dynoxide: durable orchestrations for Go on DynamoDB + SQS.
#
#   make test   every test, with the race detector (what CI runs)
#   make lint   go vet, gofmt, actionlint (.github/workflows) and durablevet
#               (the determinism analyzer) over the runtime's packages
#   make run    the demo (cmd/demo): an order workflow on two runtime nodes
#               over DynamoDB and SQS (embedded emulators unless configured)
#   make conformance  the conformance suite against the DynamoDB provider on
#               the embedded emulator, with a readable per-category summary
#   make bench  DynamoDB requests and capacity units per provider operation
#   make tf-validate  terraform fmt, init and validate of terraform/, offline
#   make tf-test      terraform apply of terraform/examples/basic against an
#                     AWS emulator, checked from Go (cmd/tfsmoke), then destroy

GO       ?= go
PARALLEL ?= 16

.PHONY: test lint run conformance bench tf-validate tf-test

# One package at a time (-p 1): each test binary runs its own emulator, and
# two at once on a small machine slow requests past the 200-500 ms windows
# some conformance tests measure.
test: tf-validate
	$(GO) test -race -count=1 -p 1 -parallel $(PARALLEL) -timeout 45m ./...

lint:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt -l reports:"; echo "$$unformatted"; exit 1; fi
	$(GO) run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
	@if [ -d durable ]; then echo "$(GO) run ./cmd/durablevet ./durable/..."; $(GO) run ./cmd/durablevet ./durable/...; fi

run:
	$(GO) run ./cmd/demo

conformance:
	$(GO) test -count=1 -parallel $(PARALLEL) -timeout 20m -json -run '^TestValidation$$' . \
		| $(GO) run ./cmd/suitereport

bench:
	$(GO) test -run '^$$' -bench . -benchtime 20x ./dynamo/

tf-validate:
	./scripts/tf-validate

tf-test:
	GO=$(GO) ./scripts/tf-test
