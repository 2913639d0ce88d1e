// Command hostkinds turns the HOSTKIND lines that TestHostKind logs (on the
// host, in each VM guest, in each container emulation) into the README's
// table of host kinds: what the helper enforces on each.
//
//	go test -v -run '^TestHostKind$' ./integration/ | go run ./integration/vm/hostkinds -kind "hybrid host, 6.18"
//
// Each input line that carries "HOSTKIND {json}" becomes one row; -kind names
// the host kind of the rows that do not name their own ("kind" in the JSON).
// With -header the table's header is printed first (and no input is
// needed).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
)

type row struct {
	Kind         string   `json:"kind"`
	Kernel       string   `json:"kernel"`
	Arch         string   `json:"arch"`
	User         string   `json:"user"`
	FSMode       string   `json:"fs_mode"`
	Namespaces   []string `json:"namespaces"`
	LandlockABI  int      `json:"landlock_abi"`
	SeccompRules int      `json:"seccomp_rules"`
	Cgroup       string   `json:"cgroup"`
	Refusal      string   `json:"refusal"`
	Degraded     []string `json:"degraded"`
}

func main() {
	kind := flag.String("kind", "", "the host kind of rows that do not name one")
	header := flag.Bool("header", false, "print the table's header first")
	flag.Parse()
	if *header {
		fmt.Println("| host kind | kernel, arch | user | filesystem | own namespaces | Landlock | limits | without --allow-degraded |")
		fmt.Println("|---|---|---|---|---|---|---|---|")
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		_, js, ok := strings.Cut(sc.Text(), "HOSTKIND ")
		if !ok {
			continue
		}
		var r row
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			fmt.Fprintf(os.Stderr, "hostkinds: %v in %q\n", err, js)
			os.Exit(1)
		}
		if r.Kind == "" {
			r.Kind = *kind
		}
		fmt.Println(render(r))
		n++
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "hostkinds:", err)
		os.Exit(1)
	}
	if n == 0 && !*header {
		fmt.Fprintln(os.Stderr, "hostkinds: no HOSTKIND line in the input (run go test with -v)")
		os.Exit(1)
	}
}

func render(r row) string {
	ns := strings.Join(r.Namespaces, ", ")
	if ns == "" {
		ns = "none"
	}
	ll := "none"
	if r.LandlockABI > 0 {
		ll = fmt.Sprintf("ABI %d", r.LandlockABI)
	}
	limits := "cgroup (" + r.Cgroup + ")"
	if r.Cgroup == "" {
		limits = "rlimits only"
	}
	strict := "runs"
	if r.Refusal != "" {
		strict = "refuses: " + short(strings.TrimPrefix(r.Refusal, "sandbox-executable: "))
	}
	fs := r.FSMode
	if len(r.Degraded) > 0 {
		fs += fmt.Sprintf(" (%d degradation(s) with --allow-degraded)", len(r.Degraded))
	}
	return fmt.Sprintf("| %s | %s, %s | %s | %s | %s | %s | %s | %s |", r.Kind, r.Kernel, r.Arch, r.User, fs, ns, ll, limits, strict)
}

// short keeps a refusal to its first clause: the table names what is
// missing, the helper's own line says the rest.
func short(s string) string {
	s = strings.TrimPrefix(s, "refusing to run: ")
	if i := strings.Index(s, "; "); i > 0 {
		s = s[:i]
	}
	if i := strings.Index(s, " ("); i > 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if len(s) > 90 {
		s = s[:87] + "..."
	}
	return strings.ReplaceAll(s, "|", "/")
}
