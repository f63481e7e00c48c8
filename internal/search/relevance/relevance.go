// Package relevance is the labelled set of natural-language tool queries
// that the search tests measure recall on and the search benchmark replays:
// GitHub's REST tools (namespace "github") and the stdio peers' tools
// (server-filesystem as "filesystem", server-memory as "memory",
// server-everything as "everything").
package relevance

// Query is a natural-language query and the tools that answer it; it is
// found when one of them is among the first five results.
type Query struct {
	Text string
	Want []string
}

// Set is the labelled set. Change it only to add queries or fix a label
// that names the wrong tool, never to make a miss go away: misses are for
// the index settings to fix.
var Set = []Query{
	// GitHub: pull requests.
	{"open a pull request", []string{"github.pulls.create"}},
	{"merge a pull request", []string{"github.pulls.merge"}},
	{"list pull requests", []string{"github.pulls.list"}},
	{"get a pull request", []string{"github.pulls.get"}},
	{"search issues and pull requests", []string{"github.search.issues_and_pull_requests"}},
	// Issues.
	{"create an issue", []string{"github.issues.create"}},
	{"comment on an issue", []string{"github.issues.create_comment"}},
	{"add labels to an issue", []string{"github.issues.add_labels"}},
	{"lock an issue", []string{"github.issues.lock"}},
	{"list issues in a repository", []string{"github.issues.list_for_repo"}},
	{"update an issue", []string{"github.issues.update"}},
	// Repositories.
	{"star a repository", []string{"github.activity.star_repo_for_authenticated_user"}},
	{"unstar a repository", []string{"github.activity.unstar_repo_for_authenticated_user"}},
	{"list my repositories", []string{"github.repos.list_for_authenticated_user"}},
	{"create a new repository", []string{"github.repos.create_for_authenticated_user", "github.repos.create_in_org"}},
	{"delete a repository", []string{"github.repos.delete"}},
	{"fork a repository", []string{"github.repos.create_fork"}},
	{"list repositories of an organization", []string{"github.repos.list_for_org"}},
	{"get the contents of a file in a repository", []string{"github.repos.get_content"}},
	{"create or update a file in a repository", []string{"github.repos.create_or_update_file_contents"}},
	{"get the readme of a repository", []string{"github.repos.get_readme"}},
	{"add a collaborator to a repository", []string{"github.repos.add_collaborator"}},
	{"list repository contributors", []string{"github.repos.list_contributors"}},
	{"who starred a repository", []string{"github.activity.list_stargazers_for_repo"}},
	{"create a repository webhook", []string{"github.repos.create_webhook"}},
	// Branches, commits, releases.
	{"delete a branch", []string{"github.git.delete_ref"}},
	{"list branches", []string{"github.repos.list_branches"}},
	{"list commits", []string{"github.repos.list_commits"}},
	{"set a commit status", []string{"github.repos.create_commit_status"}},
	{"create a release", []string{"github.repos.create_release"}},
	{"get the latest release", []string{"github.repos.get_latest_release"}},
	// Search, users, organizations.
	{"search code", []string{"github.search.code"}},
	{"find repositories", []string{"github.search.repos"}},
	{"follow a user", []string{"github.users.follow"}},
	{"who am I", []string{"github.users.get_authenticated"}},
	{"list my followers", []string{"github.users.list_followers_for_authenticated_user"}},
	{"list members of an organization", []string{"github.orgs.list_members"}},
	{"list teams in an organization", []string{"github.teams.list"}},
	// Notifications, gists, actions.
	{"list my notifications", []string{"github.activity.list_notifications_for_authenticated_user"}},
	{"mark notifications as read", []string{"github.activity.mark_notifications_as_read"}},
	{"create a gist", []string{"github.gists.create"}},
	{"trigger a workflow run", []string{"github.actions.create_workflow_dispatch"}},
	{"re-run failed jobs of a workflow", []string{"github.actions.re_run_workflow_failed_jobs"}},
	{"list workflow runs", []string{"github.actions.list_workflow_runs"}},
	{"list repository secrets", []string{"github.actions.list_repo_secrets"}},
	// Filesystem.
	{"read a file", []string{"filesystem.read_text_file"}},
	{"write a file", []string{"filesystem.write_file"}},
	{"list files in a directory", []string{"filesystem.list_directory"}},
	{"make a new folder", []string{"filesystem.create_directory"}},
	{"move or rename a file", []string{"filesystem.move_file"}},
	{"search for files by name", []string{"filesystem.search_files"}},
	{"show the directory tree", []string{"filesystem.directory_tree"}},
	{"get file metadata", []string{"filesystem.get_file_info"}},
	{"read several files at once", []string{"filesystem.read_multiple_files"}},
	{"edit a file", []string{"filesystem.edit_file"}},
	// Memory (knowledge graph).
	{"create entities in the knowledge graph", []string{"memory.create_entities"}},
	{"add observations to an entity", []string{"memory.add_observations"}},
	{"read the whole knowledge graph", []string{"memory.read_graph"}},
	{"search nodes in memory", []string{"memory.search_nodes"}},
	{"delete relations", []string{"memory.delete_relations"}},
	// Everything.
	{"echo a message", []string{"everything.echo"}},
	{"add two numbers", []string{"everything.get-sum"}},
	{"get a tiny image", []string{"everything.get-tiny-image"}},
	{"start a long running operation", []string{"everything.trigger-long-running-operation"}},
	{"print environment variables", []string{"everything.get-env"}},
}
