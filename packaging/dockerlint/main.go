// Command dockerlint checks a Dockerfile without Docker: it parses the
// instructions (line continuations, comments, parser directives, the JSON
// and shell forms) and applies the project's rules for Dockerfile.test.
//
//	go run ./packaging/dockerlint [-release-script packaging/release.sh] Dockerfile.test
//
// It is deliberately small and says so: it is not hadolint (run that too
// where it is installed; packaging/lint-dockerfile.sh does), it does not
// run shell words through a shell parser, and it refuses what it does not
// understand (heredocs, another escape character) instead of guessing.
//
// Rules:
//   - every instruction is a known one; the first is FROM, or ARG before FROM
//   - FROM names a tag or a digest, and the tag is not "latest"
//   - apt-get install runs with -y and --no-install-recommends
//   - no apt-get upgrade or dist-upgrade (the base image's packages are the
//     base image's business; an upgrade makes the build unrepeatable)
//   - the release binary is built by the release script: some RUN calls it,
//     and no RUN calls go build itself (the flags live in the script)
//   - there is a CMD or an ENTRYPOINT (the image exists to run the tests)
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	script := flag.String("release-script", "packaging/release.sh", "the script that must build the release binary")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: dockerlint [-release-script PATH] DOCKERFILE...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	bad := false
	for _, path := range flag.Args() {
		src, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dockerlint:", err)
			bad = true
			continue
		}
		probs := Lint(string(src), Rules{ReleaseScript: *script})
		for _, p := range probs {
			fmt.Fprintf(os.Stderr, "%s:%s\n", path, p)
		}
		if len(probs) > 0 {
			bad = true
		} else {
			fmt.Printf("dockerlint: %s: OK\n", path)
		}
	}
	if bad {
		os.Exit(1)
	}
}
