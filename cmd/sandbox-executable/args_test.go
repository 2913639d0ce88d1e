package main

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseArgsShapes(t *testing.T) {
	pol := `{"type":"read_only"}`
	for _, tc := range []struct {
		name string
		args []string
		want options
	}{
		{"manager form", []string{"--sandbox-policy-cwd", "/w", "--sandbox-policy", pol, "--seccomp-profile", "{}", "--resource-limits", "{}", "--", "bash", "-c", "ls"},
			options{policyCwd: "/w", policy: pol, seccompProfile: "{}", resourceLimits: "{}", argv: []string{"bash", "-c", "ls"}}},
		{"cwd and policy", []string{"--sandbox-policy-cwd", "/w", "--sandbox-policy", pol, "--", "npx", "-y"},
			options{policyCwd: "/w", policy: pol, argv: []string{"npx", "-y"}}},
		{"legacy short form without --", []string{"--sandbox-policy", pol, "npx", "-y", "--sandbox-policy", "x"},
			options{policy: pol, argv: []string{"npx", "-y", "--sandbox-policy", "x"}}},
		{"equals form", []string{"--sandbox-policy=" + pol, "--sandbox-policy-cwd=/w", "--", "true"},
			options{policyCwd: "/w", policy: pol, argv: []string{"true"}}},
		{"value with equals inside", []string{"--sandbox-policy", `{"a":"b=c"}`, "x"},
			options{policy: `{"a":"b=c"}`, argv: []string{"x"}}},
		{"program args that look like ours", []string{"--sandbox-policy", pol, "--", "prog", "--", "--sandbox-policy", "--explain"},
			options{policy: pol, argv: []string{"prog", "--", "--sandbox-policy", "--explain"}}},
		{"program named --", []string{"--sandbox-policy", pol, "--", "--", "x"},
			options{policy: pol, argv: []string{"--", "x"}}},
		{"flags and repeats", []string{"--keep-fd", "3", "--keep-fd=4", "--keep-env", "--allow-degraded", "--explain", "--sandbox-policy", pol},
			options{policy: pol, keepFDs: []int{3, 4}, keepEnv: true, allowDegraded: true, explain: true, argv: []string{}}},
		{"lone dash is a program", []string{"--sandbox-policy", pol, "-"},
			options{policy: pol, argv: []string{"-"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseArgs(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			// set records exactly the options given (it decides whether
			// the given policy is used at all).
			want := map[string]bool{}
			for _, a := range tc.args[:len(tc.args)-len(tc.want.argv)] {
				if name, _, _ := strings.Cut(a, "="); optionSpecs[name].str != nil || optionSpecs[name].flag != nil || optionSpecs[name].ints != nil {
					want[name] = true
				}
			}
			if !reflect.DeepEqual(got.set, want) {
				t.Errorf("set %v, want %v", got.set, want)
			}
			got.set = nil
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

func TestParseArgsErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--sandbox-policy"}, "--sandbox-policy needs a value"},
		{[]string{"--sandbox-policy", "a", "--sandbox-policy", "b", "x"}, "--sandbox-policy given more than once"},
		{[]string{"--no-such-option", "x"}, `unknown option "--no-such-option"`},
		{[]string{"--explain=yes"}, "--explain takes no value"},
		{[]string{"--keep-fd", "three"}, `--keep-fd: "three" is not a file descriptor number`},
		{[]string{"--keep-fd", "-1"}, `--keep-fd: "-1" is not a file descriptor number`},
		{[]string{"-x"}, `unknown option "-x"`},
		{[]string{"--sandbox-policy-cwd=", "--sandbox-policy", "{}", "x"}, "--sandbox-policy-cwd: empty value"},
		{[]string{"--fs-mode", "", "x"}, "--fs-mode: empty value"},
	} {
		_, err := parseArgs(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.msg)
		}
	}
}

func TestEtcPasswdHome(t *testing.T) {
	path := t.TempDir() + "/passwd"
	content := "root:x:0:0:root:/root:/bin/bash\nbroken line\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nnohome:x:7:7:::/bin/sh\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for uid, want := range map[int]string{0: "/root", 65534: "/nonexistent", 7: "", 1000: ""} {
		got, ok := etcPasswdHome(path, uid)
		if got != want || ok != (want != "") {
			t.Errorf("uid %d: %q %v", uid, got, ok)
		}
	}
}
