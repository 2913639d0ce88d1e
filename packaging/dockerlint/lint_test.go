package main

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

var rules = Rules{ReleaseScript: "packaging/release.sh"}

// TestRepositoryDockerfile lints the real Dockerfile.test, so that `go test
// ./...` (make unit) catches a broken one without Docker.
func TestRepositoryDockerfile(t *testing.T) {
	src, err := os.ReadFile("../../Dockerfile.test")
	if err != nil {
		t.Fatal(err)
	}
	if probs := Lint(string(src), rules); len(probs) != 0 {
		t.Fatalf("Dockerfile.test: %v", probs)
	}
}

const good = `# syntax=docker/dockerfile:1
# escape=\
ARG BASE_TAG=unused
FROM golang:1.26-bookworm AS build
# a comment
RUN apt-get update \
 # a comment inside a continuation
 && apt-get install -y --no-install-recommends \
      file \
 && rm -rf /var/lib/apt/lists/*

COPY . .
RUN RELEASE_SMOKE=0 packaging/release.sh "${VERSION}" dist
FROM build
CMD ["packaging/test-release.sh"]
`

func TestParse(t *testing.T) {
	ins, probs := Parse(good)
	if len(probs) != 0 {
		t.Fatal(probs)
	}
	var got []string
	for _, in := range ins {
		got = append(got, in.Cmd)
	}
	want := []string{"ARG", "FROM", "RUN", "COPY", "RUN", "FROM", "CMD"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("instructions %v, want %v", got, want)
	}
	run := ins[2]
	if run.Line != 6 || !strings.Contains(run.Args, "apt-get install -y --no-install-recommends") ||
		strings.Contains(run.Args, "comment") || !strings.HasSuffix(run.Args, "/var/lib/apt/lists/*") {
		t.Errorf("RUN: line %d, args %q", run.Line, run.Args)
	}
	if cmd := ins[6]; !reflect.DeepEqual(cmd.Exec, []string{"packaging/test-release.sh"}) {
		t.Errorf("CMD exec form: %q", cmd.Exec)
	}
	if probs := Lint(good, rules); len(probs) != 0 {
		t.Errorf("good file: %v", probs)
	}
}

func TestRules(t *testing.T) {
	tail := "RUN packaging/release.sh\nCMD [\"x\"]\n"
	for name, c := range map[string]struct{ src, want string }{
		"latest":          {"FROM debian:latest\n" + tail, "latest tag"},
		"no tag":          {"FROM debian\n" + tail, "no tag"},
		"registry port":   {"FROM registry:5000/debian\n" + tail, "no tag"},
		"from variable":   {"ARG B=debian:12\nFROM ${B}\n" + tail, "from a variable"},
		"recommends":      {"FROM debian:12\nRUN apt-get update && apt-get install -y gcc\n" + tail, "--no-install-recommends"},
		"no -y":           {"FROM debian:12\nRUN apt-get install --no-install-recommends gcc\n" + tail, "without -y"},
		"upgrade":         {"FROM debian:12\nRUN apt-get update && apt-get -y upgrade\n" + tail, "apt-get upgrade"},
		"dist-upgrade":    {"FROM debian:12\nRUN apt-get dist-upgrade -y\n" + tail, "apt-get upgrade"},
		"go build":        {"FROM golang:1.26\nRUN go build -o x . && packaging/release.sh\nCMD [\"x\"]\n", "go build"},
		"no release":      {"FROM golang:1.26\nRUN make build\nCMD [\"x\"]\n", "no RUN calls packaging/release.sh"},
		"script in echo":  {"FROM golang:1.26\nRUN echo packaging/release.sh.bak\nCMD [\"x\"]\n", "no RUN calls"},
		"no cmd":          {"FROM golang:1.26\nRUN packaging/release.sh\n", "no CMD"},
		"before from":     {"RUN true\nFROM debian:12\n" + tail, "before the first FROM"},
		"unknown":         {"FROM debian:12\nRUNN true\n" + tail, "unknown instruction"},
		"open":            {"FROM debian:12\n" + tail + "RUN true \\\n", "ends inside"},
		"heredoc":         {"FROM debian:12\nRUN <<EOF\ntrue\nEOF\n" + tail, "heredocs"},
		"escape":          {"# escape=`\nFROM debian:12\n" + tail, "escape directive"},
		"exec form apt":   {"FROM debian:12\nRUN [\"apt-get\", \"install\", \"-y\", \"gcc\"]\n" + tail, "--no-install-recommends"},
		"bad from syntax": {"FROM debian:12 AS\n" + tail, "want IMAGE [AS NAME]"},
	} {
		probs := Lint(c.src, rules)
		found := false
		for _, p := range probs {
			found = found || strings.Contains(p.Msg, c.want)
		}
		if !found {
			t.Errorf("%s: want a problem %q, got %v", name, c.want, probs)
		}
	}
}

func TestAccepted(t *testing.T) {
	tail := "RUN ./packaging/release.sh v1 dist\nCMD [\"x\"]\n"
	for name, src := range map[string]string{
		"digest":       "FROM golang@sha256:0123\n" + tail,
		"tag and port": "FROM registry:5000/team/golang:1.26-bookworm\n" + tail,
		"platform":     "FROM --platform=linux/amd64 debian:12\n" + tail,
		"stage":        "FROM debian:12 AS base\nFROM base\n" + tail,
		"scratch":      "FROM debian:12\n" + tail + "FROM scratch\n",
		"-qqy":         "FROM debian:12\nRUN apt-get install -qqy --no-install-recommends gcc\n" + tail,
		"upgrade word": "FROM debian:12\nRUN pip install --upgrade pip\n" + tail,
	} {
		if probs := Lint(src, rules); len(probs) != 0 {
			t.Errorf("%s: %v", name, probs)
		}
	}
}
