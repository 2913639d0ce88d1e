package policy

// Source names where a value came from, so that errors and notes can say
// which input to fix without this package knowing the caller's words for
// it: the CLI renders a Source as its flag (Input.Names).
type Source int

// Sources.
const (
	// SourceUnset is the zero value: for Input.SeccompFrom and LimitsFrom
	// it means the value given on its own (SourceSeccompProfile,
	// SourceResourceLimits).
	SourceUnset Source = iota
	// SourcePolicy is the policy document. As Input.SeccompFrom or
	// LimitsFrom: the copy embedded in it (seccomp_profile,
	// resource_limits).
	SourcePolicy
	// SourcePolicyCwd is the policy's working directory.
	SourcePolicyCwd
	// SourceSeccompProfile is a seccomp profile given on its own.
	SourceSeccompProfile
	// SourceResourceLimits are resource limits given on their own.
	SourceResourceLimits
	// SourceDerivedSeccomp and SourceDerivedLimits are computed from a
	// read_only policy: an error in them is not the caller's.
	SourceDerivedSeccomp
	SourceDerivedLimits
)

// String names s in plain words (a caller without flags of its own).
func (s Source) String() string {
	switch s {
	case SourcePolicy:
		return "sandbox policy"
	case SourcePolicyCwd:
		return "sandbox policy cwd"
	case SourceSeccompProfile:
		return "seccomp profile"
	case SourceResourceLimits:
		return "resource limits"
	case SourceDerivedSeccomp:
		return "derived seccomp profile"
	case SourceDerivedLimits:
		return "derived resource limits"
	}
	return "input"
}

// name is how the caller names s (Input.Names), else s.String().
func (in *Input) name(s Source) string {
	if in.Names != nil {
		return in.Names(s)
	}
	return s.String()
}
