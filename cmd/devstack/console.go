package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// console is make run's terminal: the story (what runs where, each demo
// step and its result) and the warnings and alerts of the logs, one whole
// line at a time whoever writes.
type console struct {
	mu sync.Mutex
	w  io.Writer
}

func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w.Write(p)
}

// step starts a numbered step of the story and returns the function that
// prints its result with the time it took, in milliseconds.
func step(w io.Writer, n int, title string) func(format string, a ...any) {
	start := time.Now()
	fmt.Fprintf(w, "\n  %d. %s\n", n, title)
	return func(format string, a ...any) {
		fmt.Fprintf(w, "     → %s (%s)\n", fmt.Sprintf(format, a...), ms(time.Since(start)))
	}
}

// ms writes a duration in whole milliseconds, with the unit in words.
func ms(d time.Duration) string {
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

// logTap receives a log stream (JSON lines, one event a line, as zerolog
// and the handler write them): it appends every line to its file, echoes
// it to the console when verbose, and otherwise shows only warnings, errors
// and alerts, each as one readable line.
type logTap struct {
	source  string    // who logs: "handler", "dev host"
	file    io.Writer // the full log
	console io.Writer
	verbose io.Writer // the console's readable rendering of every line, or nil

	mu  sync.Mutex
	buf []byte
}

// maxLogLine bounds what a line without an end may hold in memory.
const maxLogLine = 1 << 20

func (t *logTap) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		t.line(t.buf[:i+1])
		t.buf = t.buf[i+1:]
	}
	if len(t.buf) > maxLogLine {
		t.line(append(t.buf, '\n'))
		t.buf = nil
	}
	if len(t.buf) == 0 {
		t.buf = nil // let a long line's memory go
	}
	return len(p), nil
}

func (t *logTap) line(l []byte) {
	_, _ = t.file.Write(l)
	var ev map[string]any
	isJSON := json.Unmarshal(l, &ev) == nil
	if t.verbose != nil {
		if !isJSON || func() error { _, err := t.verbose.Write(l); return err }() != nil {
			fmt.Fprintf(t.console, "%s: %s", t.source, l)
		}
		return
	}
	if !isJSON {
		return
	}
	if s := notice(t.source, ev); s != "" {
		fmt.Fprintln(t.console, s)
	}
}

// notice is the console line for a log event that a person should see: an
// alert (the handler's "offpath-alert name=…" events) or a warning or error;
// "" for anything else. The dev host's copies of an invocation's own log
// lines (source "invocation") are left out: the handler's output has them.
func notice(source string, ev map[string]any) string {
	str := func(k string) string { s, _ := ev[k].(string); return s }
	if str("source") == "invocation" {
		return ""
	}
	msg, level := str("message"), str("level")
	var context []string
	for _, k := range []string{"function", "tenant", "job", "part", "deployment", "error"} {
		if v, ok := ev[k]; ok && v != "" {
			context = append(context, fmt.Sprintf("%s=%v", k, v))
		}
	}
	tail := ""
	if len(context) > 0 {
		tail = " (" + strings.Join(context, ", ") + ")"
	}
	if _, rest, ok := strings.Cut(msg, "offpath-alert name="); ok {
		alert, text, _ := strings.Cut(rest, ":")
		return "  " + oneLine(fmt.Sprintf("ALERT %s: %s%s [%s]", alert, strings.TrimSpace(text), tail, source), 300)
	}
	switch level {
	case "warn", "error", "fatal", "panic":
		word := map[string]string{"warn": "warning", "error": "error", "fatal": "fatal", "panic": "panic"}[level]
		return "  " + oneLine(fmt.Sprintf("%s: %s%s [%s]", word, msg, tail, source), 300)
	}
	return ""
}
