package setting_test

import (
	"fmt"

	"github.com/weirproxy/weir/core/setting"
)

func ExampleUnderPrefix() {
	prefixes := []string{"/health", "/api/"}
	for _, path := range []string{"/health", "/health/live", "/healthz", "/api", "/api/v1", "/apis"} {
		fmt.Println(path, setting.UnderPrefix(path, prefixes))
	}
	// Output:
	// /health 0
	// /health/live 0
	// /healthz -1
	// /api 1
	// /api/v1 1
	// /apis -1
}

func ExampleMatchPattern() {
	var patterns []setting.Pattern
	for _, s := range []string{"/static/", "*.js", "/blog/*.html"} {
		p, err := setting.ParsePattern(s)
		if err != nil {
			panic(err)
		}
		patterns = append(patterns, p)
	}
	for _, path := range []string{"/static", "/static/css/a.css", "/staticfiles", "/lib/app.js", "/a.js/b",
		"/blog/post.html", "/blog/2024/post.html", "/Static/a.css"} {
		fmt.Println(path, setting.MatchPattern(path, patterns))
	}
	// Output:
	// /static 0
	// /static/css/a.css 0
	// /staticfiles -1
	// /lib/app.js 1
	// /a.js/b -1
	// /blog/post.html 2
	// /blog/2024/post.html -1
	// /Static/a.css -1
}
