package httpcall_test

import (
	"context"
	"testing"

	"github.com/toolgate/toolgate/internal/gateway/httpcall"
	"github.com/toolgate/toolgate/internal/sources"
	"github.com/toolgate/toolgate/internal/sources/openapi"
)

func BenchmarkBuildRequest(b *testing.B) {
	auth := &sources.Auth{}
	auth.SetHeader("Authorization", "Bearer tok_0123456789")
	get := openapi.Ref{Method: "GET", Path: "/repos/{owner}/{repo}/issues", Params: []openapi.ParamRef{
		{Name: "owner", In: "path", Style: "simple", Required: true, Property: "owner"},
		{Name: "repo", In: "path", Style: "simple", Required: true, Property: "repo"},
		{Name: "state", In: "query", Style: "form", Explode: true, Property: "state"},
		{Name: "labels", In: "query", Style: "form", Explode: false, Property: "labels"},
		{Name: "per_page", In: "query", Style: "form", Explode: true, Property: "per_page"},
	}}
	getArgs := map[string]any{"owner": "toolgate", "repo": "toolgate", "state": "open", "labels": []any{"bug", "p1"}, "per_page": 50.0}
	post := openapi.Ref{Method: "POST", Path: "/repos/{owner}/{repo}/issues", Params: get.Params[:2],
		Body: &openapi.BodyRef{ContentTypes: []string{"application/json"}, Required: true}}
	postArgs := map[string]any{"owner": "toolgate", "repo": "toolgate", "body": map[string]any{
		"title": "Calls fail on 10 MB answers", "body": "Steps to reproduce: call a tool whose upstream answers 10 MB.",
		"labels": []any{"bug", "gateway"}, "assignees": []any{"alice"}, "milestone": 3.0,
	}}
	for _, bc := range []struct {
		name string
		ref  openapi.Ref
		args map[string]any
	}{{"GET 3 query params", get, getArgs}, {"POST JSON body", post, postArgs}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := httpcall.BuildRequest(ctx, bc.ref, "https://api.github.com", bc.args, auth); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
