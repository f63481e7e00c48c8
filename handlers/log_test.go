package handlers_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
)

// logBuffer collects a test's log lines so tests can check what was logged.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logs maps each test to its log buffer.
var logs sync.Map

func testLogger(t testing.TB) *slog.Logger {
	b := &logBuffer{}
	logs.Store(t.Name(), b)
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func logsOf(t testing.TB) string {
	if b, ok := logs.Load(t.Name()); ok {
		return b.(*logBuffer).String()
	}
	return ""
}
