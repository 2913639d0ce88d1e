package policy

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// A test-only encoder that writes the decoded types the way serde_json's
// to_string writes VT Code's (compact, fields in declaration order). The
// contract fixtures are serde's own output, so encoding what was decoded
// must give back their exact bytes; the fuzzers use it to check that every
// accepted input decodes again to the same value.

type jsonWriter struct {
	b     []byte
	comma bool
}

func (w *jsonWriter) sep() {
	if w.comma {
		w.b = append(w.b, ',')
	}
	w.comma = true
}

func (w *jsonWriter) key(k string) {
	w.sep()
	w.b, _ = jsontext.AppendQuote(w.b, k)
	w.b = append(w.b, ':')
	w.comma = false
}

func (w *jsonWriter) open(c byte)  { w.sep(); w.b = append(w.b, c); w.comma = false }
func (w *jsonWriter) close(c byte) { w.b = append(w.b, c); w.comma = true }

func (w *jsonWriter) str(s string) {
	w.sep()
	w.b, _ = jsontext.AppendQuote(w.b, s)
}

func (w *jsonWriter) uint(v uint64) { w.sep(); w.b = strconv.AppendUint(w.b, v, 10) }
func (w *jsonWriter) bool(v bool)   { w.sep(); w.b = strconv.AppendBool(w.b, v) }
func (w *jsonWriter) null()         { w.sep(); w.b = append(w.b, "null"...) }

func encodePolicy(p *SandboxPolicy) []byte {
	w := &jsonWriter{}
	w.open('{')
	w.key("type")
	w.str(string(p.Kind))
	if p.Kind == KindWorkspaceWrite {
		w.key("writable_roots")
		w.open('[')
		for _, r := range p.WritableRoots {
			w.open('{')
			w.key("root")
			w.str(r.Root)
			w.close('}')
		}
		w.close(']')
	}
	w.key("network_access")
	w.bool(p.NetworkAccess)
	w.key("network_allowlist")
	w.open('[')
	for _, e := range p.NetworkAllowlist {
		w.open('{')
		w.key("domain")
		w.str(e.Domain)
		w.key("port")
		w.uint(uint64(e.Port))
		w.key("protocol")
		w.str(e.Protocol)
		w.close('}')
	}
	w.close(']')
	if p.Kind == KindWorkspaceWrite {
		w.key("sensitive_paths")
		if p.SensitivePaths == nil {
			w.null()
		} else {
			w.open('[')
			for _, s := range *p.SensitivePaths {
				w.open('{')
				w.key("path")
				w.str(s.Path)
				w.key("block_read")
				w.bool(s.BlockRead)
				w.key("block_write")
				w.bool(s.BlockWrite)
				w.close('}')
			}
			w.close(']')
		}
		w.key("resource_limits")
		writeLimits(w, p.ResourceLimits)
		w.key("seccomp_profile")
		writeSeccomp(w, p.SeccompProfile)
		w.key("exclude_tmpdir_env_var")
		w.bool(p.ExcludeTmpdirEnvVar)
		w.key("exclude_slash_tmp")
		w.bool(p.ExcludeSlashTmp)
	}
	w.close('}')
	return w.b
}

func writeLimits(w *jsonWriter, l ResourceLimits) {
	w.open('{')
	w.key("max_memory_mb")
	w.uint(l.MaxMemoryMB)
	w.key("max_pids")
	w.uint(uint64(l.MaxPids))
	w.key("max_disk_mb")
	w.uint(l.MaxDiskMB)
	w.key("cpu_time_secs")
	w.uint(l.CPUTimeSecs)
	w.key("timeout_secs")
	w.uint(l.TimeoutSecs)
	w.close('}')
}

func writeSeccomp(w *jsonWriter, s SeccompProfile) {
	w.open('{')
	w.key("blocked_syscalls")
	w.open('[')
	for _, n := range s.BlockedSyscalls {
		w.str(n)
	}
	w.close(']')
	w.key("allow_namespaces")
	w.bool(s.AllowNamespaces)
	w.key("allow_network_sockets")
	w.bool(s.AllowNetworkSockets)
	w.key("log_only")
	w.bool(s.LogOnly)
	w.close('}')
}

func encodeLimits(l ResourceLimits) []byte {
	w := &jsonWriter{}
	writeLimits(w, l)
	return w.b
}

func encodeSeccomp(s SeccompProfile) []byte {
	w := &jsonWriter{}
	writeSeccomp(w, s)
	return w.b
}
