package policy

import (
	"reflect"
	"testing"
)

func TestShouldFilterEnvVar(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "openai_api_key": true, "Anthropic_Api_Key": true, "HF_TOKEN": true,
		"DATABASE_URL": true, "PGPASSWORD": true, "MYSQL_PWD": true, "SSH_AUTH_SOCK": true, "GPG_AGENT_INFO": true,
		"KUBECONFIG": true, "GITHUB_PAT": true, "GOOGLE_CLOUD_PROJECT": true, "TELEGRAM_BOT_TOKEN": true,
		// prefixes
		"AWS_REGION": true, "AZURE_X": true, "GOOGLE_X": true, "GCP_PROJECT": true, "CLOUDSDK_CONFIG": true,
		"LD_BIND_NOW": true, "ld_preload": true, "DYLD_X": true,
		// exact names, PWD included
		"PWD": true, "pwd": true, "TOKEN": true, "SECRET": true, "PASSWORD": true, "PASS": true, "CREDENTIALS": true,
		// suffixes
		"MY_TOKEN": true, "X_KEY": true, "SSH_KEY": true, "A_SECRET": true, "DB_PASS": true, "OLD_PWD": true,
		"ROOT_PASSWORD": true, "SVC_CREDENTIALS": true, "my_service_key": true,
		// kept
		"PATH": false, "HOME": false, "TERM": false, "OLDPWD": false, "TOKENS": false, "KEYS": false,
		"MY_KEYS": false, "PASSWD": false, "LANG": false, "SHELL": false, "AWS": false, "LD": false,
		"XDG_RUNTIME_DIR": false, "KEY": false, "SECRETS": false, "": false,
	} {
		if got := shouldFilterEnvVar(name); got != want {
			t.Errorf("shouldFilterEnvVar(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestResolveEnvironment(t *testing.T) {
	e := newTestEnv(t)
	environ := []string{
		"HOME=" + e.home, "PWD=/somewhere", "PATH=/bin", "github_token=ghp_x", "noequals", "=value",
		"LD_PRELOAD=/evil.so", "A=b=c", "EMPTY=", "OLDPWD=/x", "PATH=/second",
	}
	in := e.input(SandboxPolicy{Kind: KindReadOnly})
	in.Environ = environ
	env := mustResolve(t, in).Env
	want := Environment{
		Filtered: true,
		Removed:  []string{"PWD", "github_token", "LD_PRELOAD"},
		Vars:     []string{"HOME=" + e.home, "PATH=/bin", "A=b=c", "EMPTY=", "OLDPWD=/x", "PATH=/second"},
	}
	if !reflect.DeepEqual(env, want) {
		t.Fatalf("got  %+v\nwant %+v", env, want)
	}
	plan := mustResolve(t, in)
	if !reflect.DeepEqual(plan.Notes, []string{"2 environment entries without the NAME=VALUE form were dropped."}) {
		t.Fatalf("notes %q", plan.Notes)
	}

	in.KeepEnv = true
	env = mustResolve(t, in).Env
	want = Environment{Vars: []string{"HOME=" + e.home, "PWD=/somewhere", "PATH=/bin", "github_token=ghp_x",
		"LD_PRELOAD=/evil.so", "A=b=c", "EMPTY=", "OLDPWD=/x", "PATH=/second"}}
	if !reflect.DeepEqual(env, want) {
		t.Fatalf("KeepEnv: got %+v", env)
	}

	in.Environ = []string{"HOME=" + e.home, "x"}
	if plan := mustResolve(t, in); !reflect.DeepEqual(plan.Notes, []string{"1 environment entry without the NAME=VALUE form was dropped."}) {
		t.Fatalf("notes %q", plan.Notes)
	}
	in.Environ = nil
	in.PasswdHome = func() (string, error) { return e.home, nil }
	if env := mustResolve(t, in).Env; env.Vars == nil || len(env.Vars) != 0 {
		t.Fatalf("empty environment: %#v", env.Vars)
	}
}
