# toolgate's entry points for people and CI. `make` lists them.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
DATA_DIR ?= $(or $(TOOLGATE_DATA_DIR),$(CURDIR)/.data)
MEILI_BIN ?= $(DATA_DIR)/bin/meilisearch
TEST_OUTPUT ?= $(CURDIR)/.test-output
# Every test package shares the PostgreSQL and Meilisearch testservices starts.
WITH_SERVICES = $(GO) run ./cmd/testservices --

.PHONY: help deps test-deps generate generate-check build run vet test bench bench-gateway clean

help: ## List the targets
	@echo "usage: make <target>"
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-15s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

deps: ## Install what is missing: PostgreSQL, chromium-headless-shell, Meilisearch
	./.ci/install-deps

test-deps: ## Install what the tests also need: pinned npm peers (MCP servers, specs, GraphQL)
	./.ci/install-deps --test

generate: ## Generate Go from the templ templates
	$(GO) tool templ generate

generate-check: ## Fail if templ generate changes the committed *_templ.go files
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		list() { git ls-files -z --cached --others --exclude-standard -- '*_templ.go' | xargs -0r sha256sum; }; \
		before=$$(list); \
		$(GO) tool templ generate; \
		after=$$(list); \
		if [ "$$before" != "$$after" ]; then \
			{ diff <(echo "$$before") <(echo "$$after") || true; } | sed -n 's/^> [0-9a-f]*  /  /p' >&2; \
			echo "templ generate changed the files above: run make generate and commit them" >&2; \
			exit 1; \
		fi; \
	else \
		$(GO) tool templ generate; \
	fi

build: generate ## Build bin/toolgate
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/toolgate ./cmd/toolgate

run: deps build ## Run the console with demo data (embedded PostgreSQL and Meilisearch in .data)
	exec env TOOLGATE_DEMO=true TOOLGATE_LOG_FORMAT=text MEILI_BIN="$(MEILI_BIN)" ./bin/toolgate serve

vet: ## Run go vet
	$(GO) vet ./...

test: test-deps generate-check vet ## Run every test; screenshots and browser output go to .test-output/
	mkdir -p "$(TEST_OUTPUT)"
	TOOLGATE_TEST_OUTPUT="$(TEST_OUTPUT)" MEILI_BIN="$(MEILI_BIN)" \
		$(WITH_SERVICES) $(GO) test -count=1 -timeout 30m -p 2 ./...

bench: test-deps ## Run the benchmarks
	MEILI_BIN="$(MEILI_BIN)" $(WITH_SERVICES) $(GO) test -run '^$$' -bench . -benchmem -count=1 ./...

bench-gateway: ## Benchmark tool calls through /mcp against calling the upstreams directly
	$(WITH_SERVICES) $(GO) run ./bench/gateway

clean: ## Remove bin/ and .test-output/ (keeps .data, which holds the database)
	rm -rf bin "$(TEST_OUTPUT)"
