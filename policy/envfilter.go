package policy

import (
	"strconv"
	"strings"
)

// filteredEnvVars is VT Code's FILTERED_ENV_VARS (CONTRACT §7).
var filteredEnvVars = map[string]bool{
	"OPENAI_API_KEY": true, "ANTHROPIC_API_KEY": true, "GEMINI_API_KEY": true, "XAI_API_KEY": true,
	"DEEPSEEK_API_KEY": true, "META_API_KEY": true, "MODEL_API_KEY": true, "OPENROUTER_API_KEY": true,
	"GROQ_API_KEY": true, "MISTRAL_API_KEY": true, "COHERE_API_KEY": true, "AZURE_OPENAI_API_KEY": true,
	"HUGGINGFACE_API_KEY": true, "HF_TOKEN": true, "AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true,
	"AWS_SESSION_TOKEN": true, "GOOGLE_APPLICATION_CREDENTIALS": true, "GOOGLE_CLOUD_PROJECT": true,
	"AZURE_CLIENT_ID": true, "AZURE_CLIENT_SECRET": true, "AZURE_TENANT_ID": true, "AZURE_SUBSCRIPTION_ID": true,
	"GITHUB_TOKEN": true, "GH_TOKEN": true, "GITHUB_PAT": true, "NPM_TOKEN": true, "NPM_AUTH_TOKEN": true,
	"CARGO_REGISTRY_TOKEN": true, "PYPI_TOKEN": true, "DATABASE_URL": true, "DB_PASSWORD": true,
	"PGPASSWORD": true, "MYSQL_PWD": true, "REDIS_PASSWORD": true, "MONGO_PASSWORD": true,
	"SSH_AUTH_SOCK": true, "GPG_AGENT_INFO": true, "LD_PRELOAD": true, "LD_LIBRARY_PATH": true,
	"LD_AUDIT": true, "LD_DEBUG": true, "LD_PROFILE": true, "DYLD_INSERT_LIBRARIES": true,
	"DYLD_LIBRARY_PATH": true, "DYLD_FRAMEWORK_PATH": true, "DYLD_FALLBACK_LIBRARY_PATH": true,
	"VAULT_TOKEN": true, "CONSUL_HTTP_TOKEN": true, "DOCKER_AUTH_CONFIG": true, "KUBECONFIG": true,
	"KUBE_TOKEN": true, "SLACK_TOKEN": true, "SLACK_BOT_TOKEN": true, "DISCORD_TOKEN": true,
	"TELEGRAM_BOT_TOKEN": true,
}

// filteredEnvPrefixes, filteredEnvExact and filteredEnvSuffixes are the
// other rules of VT Code's should_filter_env_var.
var (
	filteredEnvPrefixes = []string{"AWS_", "AZURE_", "GOOGLE_", "GCP_", "CLOUDSDK_", "LD_", "DYLD_"}
	filteredEnvExact    = map[string]bool{"TOKEN": true, "SECRET": true, "PASSWORD": true, "PASS": true, "PWD": true, "CREDENTIALS": true}
	filteredEnvSuffixes = []string{"_TOKEN", "_KEY", "_SECRET", "_PASS", "_PWD", "_PASSWORD", "_CREDENTIALS"}
)

// shouldFilterEnvVar is VT Code's should_filter_env_var: it compares the
// upper-cased name with the list, the prefixes, the exact names (PWD
// included) and the suffixes.
func shouldFilterEnvVar(name string) bool {
	u := strings.ToUpper(name)
	if filteredEnvVars[u] || filteredEnvExact[u] {
		return true
	}
	for _, p := range filteredEnvPrefixes {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	for _, s := range filteredEnvSuffixes {
		if strings.HasSuffix(u, s) {
			return true
		}
	}
	return false
}

// environment fills Plan.Env: the helper's environment minus what VT
// Code's filter drops (unless KeepEnv), in the original order. Entries that
// are not NAME=VALUE (no "=", or an empty name) are dropped in any case.
func (r *resolver) environment() {
	e := &r.plan.Env
	e.Filtered = !r.in.KeepEnv
	e.Vars = []string{}
	malformed := 0
	for _, kv := range r.in.Environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			malformed++
			continue
		}
		if e.Filtered && shouldFilterEnvVar(name) {
			e.Removed = append(e.Removed, name)
			continue
		}
		e.Vars = append(e.Vars, kv)
	}
	switch {
	case malformed == 1:
		r.note("1 environment entry without the NAME=VALUE form was dropped.")
	case malformed > 1:
		r.note(strconv.Itoa(malformed) + " environment entries without the NAME=VALUE form were dropped.")
	}
}
