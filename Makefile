# PaddleCloud Console. `make run` and `make test` are the two commands in the
# README's Quick start; both install what they need first.
SHELL := /bin/bash
.DEFAULT_GOAL := help
.PHONY: help setup build run test test-rust test-sdk test-api test-e2e test-load test-kube-node lint fmt clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

setup: ## Install build tools (wasm target, wasm-bindgen, wasm-opt)
	scripts/setup.sh build

build: setup ## Release build: wasm bundle, site directory, server binary
	scripts/build.sh

run: build ## Build and start the console on http://127.0.0.1:3000 (SQLite under ./data)
	"$${CARGO_TARGET_DIR:-target}/release/paddlecloud" serve

test: ## Install test tools, build, run every test (Rust on SQLite + PostgreSQL, Playwright)
	scripts/setup.sh test
	scripts/build.sh
	scripts/test.sh

test-rust: ## Only the Rust tests (starts a throwaway PostgreSQL)
	scripts/test.sh rust

test-sdk: ## Only the Python SDK tests against the release binary
	scripts/test.sh sdk

test-api: ## Only the REST API against its OpenAPI document (schemathesis)
	scripts/test.sh api

test-e2e: ## Only the browser tests against the release build
	scripts/test.sh e2e

test-load: ## Only the short load and fault run against the release binary (SQLite + PostgreSQL)
	scripts/test.sh load

test-kube-node: ## As root: a real single-node Kubernetes (containerd, CNI, kube-proxy, DNS), its checks, the console deployed and tested on it
	scripts/test.sh kube-node

lint: ## rustfmt and clippy for the server and the browser builds
	cargo fmt --all -- --check
	cargo clippy --locked --all-targets -p app -p server --features app/ssr -- -D warnings
	cargo clippy --locked --all-targets -p app -p frontend --features app/hydrate --target wasm32-unknown-unknown -- -D warnings

fmt: ## Format the code
	cargo fmt --all

clean: ## Remove build output (keeps ./data and ~/.cache/paddlecloud)
	cargo clean
