module sandbox-executable

go 1.26.0

require (
	github.com/creack/pty v1.1.24 // indirect
	github.com/go-json-experiment/json v1.27.2 // indirect
	github.com/seccomp/libseccomp-golang v0.11.1 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
