package tenancy

import (
	"testing"

	"github.com/toolgate/toolgate/db"
	"github.com/toolgate/toolgate/internal/auth"
)

func TestAPIKeyInputValidate(t *testing.T) {
	for _, tc := range []struct {
		in      APIKeyInput
		invalid []string
	}{
		{APIKeyInput{Name: " agent "}, nil},
		{APIKeyInput{Name: "agent", Mode: "direct", ExpiresInDays: 366}, nil},
		{APIKeyInput{Name: ""}, []string{"name"}},
		{APIKeyInput{Name: "<script>", Mode: "all", ExpiresInDays: 367}, []string{"name", "mode", "expires_in_days"}},
		{APIKeyInput{Name: "agent", ExpiresInDays: -1}, []string{"expires_in_days"}},
	} {
		in := tc.in
		e := in.Validate()
		if len(e) != len(tc.invalid) {
			t.Errorf("%+v: errors %v, want fields %v", tc.in, e, tc.invalid)
		}
		for _, f := range tc.invalid {
			if e[f] == "" {
				t.Errorf("%+v: no error on %s", tc.in, f)
			}
		}
		if len(e) == 0 && (in.Name != "agent" || in.Mode == "") {
			t.Errorf("%+v: normalized to %+v", tc.in, in)
		}
	}
}

func TestAPIKeyPermissions(t *testing.T) {
	mine, theirs := db.APIKey{UserID: 1}, db.APIKey{UserID: 2}
	for _, tc := range []struct {
		role                       auth.Role
		create, revokeMine, revoke bool
	}{
		{auth.Owner, true, true, true},
		{auth.Admin, true, true, true},
		{auth.Member, true, true, false},
		{auth.Viewer, false, false, false},
		{"", false, false, false},
	} {
		if got := CanCreateAPIKey(tc.role); got != tc.create {
			t.Errorf("%q create = %v", tc.role, got)
		}
		if got := CanRevokeAPIKey(1, tc.role, mine); got != tc.revokeMine {
			t.Errorf("%q revoke own = %v", tc.role, got)
		}
		if got := CanRevokeAPIKey(1, tc.role, theirs); got != tc.revoke {
			t.Errorf("%q revoke another's = %v", tc.role, got)
		}
	}
}
