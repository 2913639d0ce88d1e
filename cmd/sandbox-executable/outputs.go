package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"sandbox-executable/report"
	"sandbox-executable/supervisor"
)

// outputs are where the helper writes besides the one stderr line of a
// fatal error, each only when asked for: the report, the denial log and
// structured logs. Nothing goes to stdout: it belongs to the program.
type outputs struct {
	report   io.WriteCloser
	reportFD int // --report-fd, or -1
	denials  *json.Encoder
	files    []io.Closer
	log      *slog.Logger
	// logging: a log was asked for (log writes somewhere).
	logging bool
}

// logEnv is the environment variable that sets the log level when
// --log-level is not given.
const logEnv = "SANDBOX_EXECUTABLE_LOG"

func openOutputs(o *options) (*outputs, error) {
	out := &outputs{log: slog.New(slog.DiscardHandler), reportFD: -1}
	openFile := func(option, path string) (*os.File, error) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			out.close()
			return nil, fmt.Errorf("%s: %w", option, err)
		}
		out.files = append(out.files, f)
		return f, nil
	}
	switch {
	case o.set["--report-file"] && o.set["--report-fd"]:
		return nil, fmt.Errorf("--report-file and --report-fd: give one")
	case o.set["--report-file"]:
		f, err := openFile("--report-file", o.reportFile)
		if err != nil {
			return nil, err
		}
		out.report = f
	case o.set["--report-fd"]:
		fd, err := atoiFD("--report-fd", o.reportFD)
		if err != nil {
			return nil, err
		}
		if err := checkFD("--report-fd", fd); err != nil {
			return nil, err
		}
		out.report = os.NewFile(uintptr(fd), "report")
		out.reportFD = fd
	}
	if o.set["--log-denials"] {
		f, err := openFile("--log-denials", o.logDenials)
		if err != nil {
			return nil, err
		}
		out.denials = json.NewEncoder(f)
	}
	level, levelFrom := o.logLevel, "--log-level"
	if !o.set["--log-level"] {
		level, levelFrom = os.Getenv(logEnv), logEnv
	}
	if level == "" && (o.set["--log-file"] || o.set["--log-format"]) {
		// Asking for a log file or format is asking for a log.
		level = "info"
	}
	if level != "" {
		var l slog.Level
		if err := l.UnmarshalText([]byte(level)); err != nil {
			out.close()
			return nil, fmt.Errorf("%s: %s is not one of debug, info, warn, error", levelFrom, quoteArg(level))
		}
		var w io.Writer = os.Stderr
		if o.set["--log-file"] {
			f, err := openFile("--log-file", o.logFile)
			if err != nil {
				return nil, err
			}
			w = f
		}
		out.logging = true
		opts := &slog.HandlerOptions{Level: l}
		switch strings.ToLower(o.logFormat) {
		case "", "text":
			out.log = slog.New(slog.NewTextHandler(w, opts))
		case "json":
			out.log = slog.New(slog.NewJSONHandler(w, opts))
		default:
			out.close()
			return nil, fmt.Errorf("--log-format: %s is not text or json", quoteArg(o.logFormat))
		}
	}
	return out, nil
}

// denial writes one denial as a JSON line.
func (o *outputs) denial(d supervisor.Denial) {
	if d.Kind == supervisor.DenialNetwork {
		o.log.Warn("denied", "kind", d.Kind, "host", d.Host, "port", d.Port, "reason", d.Reason)
	} else {
		o.log.Warn("denied", "kind", d.Kind, "syscall", d.Syscall, "pid", d.Pid, "exe", d.Exe, "errno", d.Errno)
	}
	if o.denials != nil {
		_ = o.denials.Encode(d)
	}
}

// writeReport writes the report when one was asked for.
func (o *outputs) writeReport(in report.Input) {
	if o.report == nil {
		return
	}
	if err := report.Build(in).Write(o.report); err != nil {
		fmt.Fprintf(os.Stderr, "%s: report: %v\n", prog, err)
	}
	o.report.Close()
	o.report = nil
}

func (o *outputs) close() {
	for _, f := range o.files {
		f.Close()
	}
	o.files = nil
}
