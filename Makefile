# duradyn: durable orchestrations for Go on DynamoDB + SQS.
#
#   make check  the fast loop: go vet, gofmt, staticcheck, durablevet and
#               the tests that need no emulator (-short, with
#               DURADYN_NO_EMULATOR set), in a few minutes
#   make test   every Go test, with the race detector (what CI runs)
#   make lint   go vet, gofmt, actionlint (.github/workflows), staticcheck
#               (staticcheck.conf) and durablevet (the determinism analyzer)
#               over the runtime's packages
#   make run    the demo (cmd/demo): an order workflow on two runtime nodes
#               over DynamoDB and SQS (embedded emulators unless configured)
#   make conformance  the conformance suite against the DynamoDB provider on
#               the embedded emulator, with a readable per-category summary
#   make bench  DynamoDB requests and capacity units per provider operation
#   make bench-e2e  the end-to-end benchmarks (bench/, its own module): the
#               runtime on memprovider and on DynamoDB Local (with and
#               without SQS, and behind a 4 ms proxy) beside go-workflows;
#               writes bench/results/ (53 to 115 minutes, 15 to 50 of them
#               FetchCost seeding its table with 100,000 instances)
#   make tf-validate  terraform fmt, init and validate of terraform/, offline
#   make tf-test      tf-validate, then terraform apply of terraform/examples/basic
#                     against an AWS emulator, checked from Go (internal/cmd/tfsmoke), then destroy;
#                     then the same for the Lambda example (examples/lambda,
#                     scripts/tf-test-lambda, internal/cmd/lambdasmoke)
#   make lambda-zip   the Lambda function of examples/lambda (bootstrap for
#                     provided.al2023, linux/arm64), zipped: build/lambda/bootstrap.zip

GO       ?= go
PARALLEL ?= 16

.PHONY: check test test-packages lint vet run conformance bench bench-e2e tf-validate tf-test lambda-zip

# The benchmark module finds the emulators the library's tests install.
BENCH_ENV = DURADYN_CACHE_DIR=$(CURDIR)/.cache/emulators

# The library's test binaries and the benchmark module's share one pair of
# emulators (internal/cmd/withemulators): DynamoDB Local starts and warms up
# once instead of once a package. The SQS emulator is fauxqs unless
# DURADYN_SQS_EMULATOR says otherwise: over the root package, moto's Python
# server used about 170 s of CPU and fauxqs about 16 s. The root package
# runs alone: its suites keep both cores busy, and its conformance tests
# measure 200-500 ms windows that a second package's load would stretch.
# The other packages wait on leases, timers and processes more than they
# compute, so they run two at a time (-p 2: 383 s instead of 526 s), the
# longest first so that none is left running alone at the end. Three at a
# time doubled the time of several: beside tf-validate a Lambda host test
# ran out of its two minutes; without it dynamo took 395 s and console
# 369 s, against 204 s and 196 s side by side, and a renewal under test
# returned 68 ms past its lease: its process ran 318 ms late on a 250 ms
# margin. At two the cores are over 80 % busy on average. It uses the
# endpoints of
# DURADYN_DYNAMODB_ENDPOINT and DURADYN_SQS_ENDPOINT, or LocalStack, when
# those are there, as every test does. The Terraform checks are tf-test's:
# they need Terraform, which the Go tests do not.
test:
	./scripts/install-chromium
	./bench/scripts/install-redis
	DURADYN_SQS_EMULATOR=$${DURADYN_SQS_EMULATOR:-fauxqs} $(GO) run ./internal/cmd/withemulators -- $(MAKE) --no-print-directory test-packages

# LONG_PACKAGES take a minute or more under make test; test-packages starts
# them first.
LONG_PACKAGES = ./dynamo ./console ./lambdahost ./internal/crashsoak ./cmd/duradyn ./jobs ./durable ./locks

# test-packages is make test's part beside the emulators. -vet=off: go
# vet is make vet's (CI runs it first, in make lint), with every analyzer;
# go test's own subset cost about 66 s of CPU on a cold build cache.
test-packages:
	$(GO) test -race -vet=off -count=1 -parallel $(PARALLEL) -timeout 45m .
	$(GO) test -race -vet=off -count=1 -p 2 -parallel $(PARALLEL) -timeout 45m $(LONG_PACKAGES) \
		$$($(GO) list ./... | grep -vx -e 'github.com/duradyn/duradyn' $(patsubst ./%,-e 'github.com/duradyn/duradyn/%',$(LONG_PACKAGES)))
	cd bench && $(BENCH_ENV) $(GO) test -race -vet=off -count=1 -short -timeout 20m ./...

check: vet
	DURADYN_NO_EMULATOR=1 $(GO) test -short -count=1 -timeout 10m ./...

lint: vet
	$(GO) run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12

# The static checks check and lint share.
vet:
	$(GO) vet ./...
	cd bench && $(GO) vet ./...
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt -l reports:"; echo "$$unformatted"; exit 1; fi
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.7.0 ./...
	cd bench && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.7.0 ./...
	$(GO) run ./cmd/durablevet ./durable/...

run:
	$(GO) run ./cmd/demo

conformance:
	$(GO) test -count=1 -parallel $(PARALLEL) -timeout 20m -json -run '^TestValidation$$' . \
		| $(GO) run ./internal/cmd/suitereport

bench:
	$(GO) test -run '^$$' -bench . -benchtime 20x ./dynamo/

bench-e2e:
	./bench/scripts/install-redis
	cd bench && $(BENCH_ENV) $(GO) run ./cmd/benche2e -out results \
		-scenarios HelloCities5,EndpointCeiling,EndpointShare,HelloCities5Load,HelloCities5Payload1KB,Chain1000,Chain1000Payload1KB,Chain1000PayloadRandom1KB,FanOut1000,FanOut10000,Shards16,StartAfterIdle,Idle,Recovery,History10000,FetchCost,ServerlessCost

tf-validate:
	./scripts/tf-validate

tf-test: tf-validate
	GO=$(GO) ./scripts/tf-test
	GO=$(GO) ./scripts/tf-test-lambda

# The Lambda function's package: a static linux/arm64 bootstrap (no RPC
# mode, no cgo, no build paths or ids, so one source gives one binary) in a
# zip whose entry times are fixed (internal/cmd/lambdazip), which
# terraform/modules/lambda-worker deploys. LAMBDA_MAIN builds another main.
LAMBDA_MAIN ?= ./examples/lambda
LAMBDA_DIR  ?= build/lambda

lambda-zip:
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w -buildid=' \
		-o $(LAMBDA_DIR)/bootstrap $(LAMBDA_MAIN)
	$(GO) run ./internal/cmd/lambdazip -o $(LAMBDA_DIR)/bootstrap.zip $(LAMBDA_DIR)/bootstrap
	@echo "$(LAMBDA_DIR)/bootstrap.zip"
