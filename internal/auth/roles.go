package auth

// Role is a member's role in an organization.
type Role string

// The roles, most powerful first.
const (
	Owner  Role = "owner"
	Admin  Role = "admin"
	Member Role = "member"
	Viewer Role = "viewer"
)

// Roles lists every role, most powerful first.
var Roles = []Role{Owner, Admin, Member, Viewer}

func (r Role) rank() int {
	switch r {
	case Owner:
		return 4
	case Admin:
		return 3
	case Member:
		return 2
	case Viewer:
		return 1
	}
	return 0
}

// Valid reports whether r is one of [Roles].
func (r Role) Valid() bool { return r.rank() > 0 }

// AtLeast reports whether r carries every permission of min.
func (r Role) AtLeast(min Role) bool { return r.rank() >= min.rank() && r.Valid() }

// Label is the role's name for people.
func (r Role) Label() string {
	switch r {
	case Owner:
		return "Owner"
	case Admin:
		return "Admin"
	case Member:
		return "Member"
	case Viewer:
		return "Viewer"
	}
	return string(r)
}

// Describe says what the role may do.
func (r Role) Describe() string {
	switch r {
	case Owner:
		return "Everything, including managing owners."
	case Admin:
		return "Manage members, workspaces and settings."
	case Member:
		return "Use workspaces and keep their own credentials."
	case Viewer:
		return "Read-only access."
	}
	return ""
}
