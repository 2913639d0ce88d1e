# sandbox-executable build and test entry points. `make test` is what CI runs.
GO       ?= go
BIN      := bin/sandbox-executable
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)

.PHONY: all build test unit integration lint fuzz-short clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/sandbox-executable

unit:
	$(GO) test -race $$($(GO) list ./... | grep -v /integration)

integration: build
	SANDBOX_EXECUTABLE=$(CURDIR)/$(BIN) $(GO) test -count=1 ./integration/...

lint:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

test: lint unit integration

clean:
	rm -rf bin dist
