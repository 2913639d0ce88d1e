module sandbox-executable

go 1.26.0

require (
	github.com/creack/pty v1.1.24
	github.com/go-json-experiment/json v1.27.2
	github.com/godbus/dbus/v5 v5.2.4
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/seccomp/libseccomp-golang v0.11.1
	golang.org/x/sys v0.50.0
)

require golang.org/x/text v0.14.0 // indirect
