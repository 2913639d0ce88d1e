// Command sandbox-executable runs a program under a sandbox policy.
package main

import (
	"fmt"
	"os"
)

var version = "dev"

func main() {
	fmt.Fprintln(os.Stderr, "sandbox-executable: not built yet")
	os.Exit(125)
}
