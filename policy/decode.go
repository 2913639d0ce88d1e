package policy

import "strings"

// DecodePolicy decodes the value of --sandbox-policy: VT Code's SandboxPolicy
// as serde_json would, with two fail-closed differences (see the package
// doc). It returns an *Error with Arg empty on any problem.
func DecodePolicy(data []byte) (*SandboxPolicy, error) {
	root, err := parseDocument(data)
	if err != nil {
		return nil, err
	}
	return decodePolicyNode(root)
}

// DecodeSeccompProfile decodes the value of --seccomp-profile. An absent
// blocked_syscalls means VT Code's default list; [] blocks nothing.
func DecodeSeccompProfile(data []byte) (*SeccompProfile, error) {
	root, err := parseDocument(data)
	if err != nil {
		return nil, err
	}
	s, err := decodeSeccompProfile(root, nil)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// DecodeResourceLimits decodes the value of --resource-limits. Every field
// defaults to 0, timeout_secs included ({} means all zeros).
func DecodeResourceLimits(data []byte) (*ResourceLimits, error) {
	root, err := parseDocument(data)
	if err != nil {
		return nil, err
	}
	l, err := decodeResourceLimits(root, nil)
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// tagName is the member that holds the variant of an internally tagged enum.
const tagName = "type"

// allKinds lists the variants in declaration order, for error messages.
var allKinds = []Kind{KindReadOnly, KindWorkspaceWrite, KindDangerFullAccess, KindExternalSandbox}

// decodePolicyNode decodes SandboxPolicy, #[serde(tag = "type")]: the tag may
// appear anywhere in the object; the other members belong to the variant.
func decodePolicyNode(n *node) (*SandboxPolicy, error) {
	if n.kind != nodeObject {
		return nil, typeError(nil, "a JSON object (a sandbox policy)", n)
	}
	var tag *node
	for _, m := range n.members {
		if m.name == tagName {
			tag = m.value
		}
	}
	if tag == nil {
		return nil, &Error{Msg: "missing field `" + tagName + "`"}
	}
	tagPath := (*jsonPath)(nil).field(tagName)
	if tag.kind != nodeString {
		return nil, typeError(tagPath, "a string naming the policy variant", tag)
	}
	p := &SandboxPolicy{Kind: Kind(tag.text)}
	context := "for policy type " + tick(tag.text)
	var fields []field
	switch p.Kind {
	case KindReadOnly:
		p.NetworkAllowlist = []NetworkAllowlistEntry{}
		fields = networkFields(p)
	case KindWorkspaceWrite:
		p.NetworkAllowlist = []NetworkAllowlistEntry{}
		p.ResourceLimits = DefaultResourceLimits()
		p.SeccompProfile = StrictSeccompProfile()
		fields = workspaceWriteFields(p)
	case KindDangerFullAccess:
		// A unit variant: nothing but the tag.
	case KindExternalSandbox:
		var description string
		fields = []field{stringField("description", true, &description)}
	default:
		return nil, &Error{Path: tagPath.String(), Msg: "unknown variant " + tick(tag.text) + ", expected one of " + kindList()}
	}
	if err := decodeStruct(n, nil, "", context, tagName, fields); err != nil {
		return nil, err
	}
	switch p.Kind {
	case KindDangerFullAccess:
		return nil, &Error{Path: tagPath.String(), Msg: "`danger_full_access` is refused: it means no sandbox at all; VT Code runs such commands directly and never sends this policy to a sandbox helper, so running it here would mean running unconfined"}
	case KindExternalSandbox:
		return nil, &Error{Path: tagPath.String(), Msg: "`external_sandbox` is refused: it means some other sandbox confines the command; VT Code never sends this policy to a sandbox helper, and running it here would mean running unconfined"}
	}
	return p, nil
}

func kindList() string {
	names := make([]string, len(allKinds))
	for i, k := range allKinds {
		names[i] = "`" + string(k) + "`"
	}
	return strings.Join(names, ", ")
}

// networkFields are the fields read_only and workspace_write share.
func networkFields(p *SandboxPolicy) []field {
	return []field{
		boolField("network_access", &p.NetworkAccess),
		{name: "network_allowlist", decode: func(n *node, path *jsonPath) error {
			list, err := decodeAllowlist(n, path)
			p.NetworkAllowlist = list
			return err
		}},
	}
}

func workspaceWriteFields(p *SandboxPolicy) []field {
	return append(networkFields(p),
		field{name: "writable_roots", required: true, decode: func(n *node, path *jsonPath) error {
			roots, err := decodeWritableRoots(n, path)
			p.WritableRoots = roots
			return err
		}},
		field{name: "sensitive_paths", decode: func(n *node, path *jsonPath) error {
			if n.kind == nodeNull { // Option<Vec<_>>: null is None
				p.SensitivePaths = nil
				return nil
			}
			list, err := decodeSensitivePaths(n, path)
			if err != nil {
				return err
			}
			p.SensitivePaths = &list
			return nil
		}},
		field{name: "resource_limits", decode: func(n *node, path *jsonPath) (err error) {
			p.ResourceLimits, err = decodeResourceLimits(n, path)
			p.GaveLimits = true
			return err
		}},
		field{name: "seccomp_profile", decode: func(n *node, path *jsonPath) (err error) {
			p.SeccompProfile, err = decodeSeccompProfile(n, path)
			p.GaveSeccomp = true
			return err
		}},
		boolField("exclude_tmpdir_env_var", &p.ExcludeTmpdirEnvVar),
		boolField("exclude_slash_tmp", &p.ExcludeSlashTmp),
	)
}

func decodeWritableRoots(n *node, path *jsonPath) ([]WritableRoot, error) {
	roots := []WritableRoot{}
	err := decodeArray(n, path, func(e *node, p *jsonPath) error {
		var r WritableRoot
		err := decodeStruct(e, p, "a JSON object (a writable root)", "", "", []field{
			stringField("root", true, &r.Root),
		})
		roots = append(roots, r)
		return err
	})
	return roots, err
}

func decodeAllowlist(n *node, path *jsonPath) ([]NetworkAllowlistEntry, error) {
	list := []NetworkAllowlistEntry{}
	err := decodeArray(n, path, func(e *node, p *jsonPath) error {
		entry := NetworkAllowlistEntry{Port: 443, Protocol: "tcp"}
		err := decodeStruct(e, p, "a JSON object (a network allowlist entry)", "", "", []field{
			stringField("domain", true, &entry.Domain),
			uint16Field("port", &entry.Port),
			stringField("protocol", false, &entry.Protocol),
		})
		list = append(list, entry)
		return err
	})
	return list, err
}

func decodeSensitivePaths(n *node, path *jsonPath) ([]SensitivePath, error) {
	list := []SensitivePath{}
	err := decodeArray(n, path, func(e *node, p *jsonPath) error {
		sp := SensitivePath{BlockRead: true, BlockWrite: true}
		err := decodeStruct(e, p, "a JSON object (a sensitive path)", "", "", []field{
			stringField("path", true, &sp.Path),
			boolField("block_read", &sp.BlockRead),
			boolField("block_write", &sp.BlockWrite),
		})
		list = append(list, sp)
		return err
	})
	return list, err
}

// decodeResourceLimits decodes a present ResourceLimits object: each missing
// field is 0 (field-level #[serde(default)]), timeout_secs included.
func decodeResourceLimits(n *node, path *jsonPath) (ResourceLimits, error) {
	var l ResourceLimits
	err := decodeStruct(n, path, "a JSON object (resource limits)", "", "", []field{
		uint64Field("max_memory_mb", &l.MaxMemoryMB),
		uint32Field("max_pids", &l.MaxPids),
		uint64Field("max_disk_mb", &l.MaxDiskMB),
		uint64Field("cpu_time_secs", &l.CPUTimeSecs),
		uint64Field("timeout_secs", &l.TimeoutSecs),
	})
	return l, err
}

// decodeSeccompProfile decodes a present SeccompProfile object: a missing
// blocked_syscalls is BLOCKED_SYSCALLS, missing flags are false.
func decodeSeccompProfile(n *node, path *jsonPath) (SeccompProfile, error) {
	s := StrictSeccompProfile()
	err := decodeStruct(n, path, "a JSON object (a seccomp profile)", "", "", []field{
		{name: "blocked_syscalls", decode: func(n *node, p *jsonPath) error {
			names := []string{}
			err := decodeArray(n, p, func(e *node, ep *jsonPath) error {
				name, err := decodeString(e, ep)
				names = append(names, name)
				return err
			})
			s.BlockedSyscalls = names
			return err
		}},
		boolField("allow_namespaces", &s.AllowNamespaces),
		boolField("allow_network_sockets", &s.AllowNetworkSockets),
		boolField("log_only", &s.LogOnly),
	})
	return s, err
}
