package main

import "testing"

func TestRunPassesServicesAndExitStatus(t *testing.T) {
	script := `[ -n "$TOOLGATE_TEST_DATABASE_URL" ] && [ -n "$TOOLGATE_TEST_MEILI_URL" ] &&
		[ -n "$TOOLGATE_TEST_MEILI_KEY" ] && exit 3; exit 1`
	if code := run([]string{"sh", "-c", script}); code != 3 {
		t.Errorf("run: exit status %d, want the command's 3", code)
	}
	if code := run([]string{"no-such-command-for-testservices"}); code != 127 {
		t.Errorf("run of a missing command: exit status %d, want 127", code)
	}
}
