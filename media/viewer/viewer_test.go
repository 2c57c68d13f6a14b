package viewer_test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/media/viewer"
)

func get(t *testing.T, h http.Handler, method, url string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, url, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestPageHeaders: the page is revalidated on every load, its files are
// kept for good under their version's path, every answer carries the
// strict security policy, a revalidation of an unchanged file is 304, and
// what is not the page's is 404 (another version's files too) or 405.
func TestPageHeaders(t *testing.T) {
	h := viewer.New()
	v := h.Version()
	if len(v) != 16 {
		t.Fatalf("version %q", v)
	}
	page := get(t, h, http.MethodGet, "/viewer/", nil)
	if page.Code != http.StatusOK || page.Header().Get("Content-Type") != "text/html; charset=utf-8" || page.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("page: %d %v", page.Code, page.Header())
	}
	body := page.Body.String()
	if strings.Contains(body, "{{") || !strings.Contains(body, `src="a/`+v+`/main.js"`) {
		t.Fatalf("page does not name its files by version %s:\n%s", v, body)
	}
	if again := get(t, h, http.MethodGet, "/viewer/index.html", nil); again.Body.String() != body {
		t.Error("index.html differs from the page")
	}
	for _, w := range []*httptest.ResponseRecorder{page, get(t, h, http.MethodGet, "/viewer/a/"+v+"/main.js", nil), get(t, h, http.MethodGet, "/viewer/x", nil)} {
		csp := w.Header().Get("Content-Security-Policy")
		for _, d := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, d) {
				t.Errorf("%d answer's policy %q lacks %s", w.Code, csp, d)
			}
		}
		if strings.Contains(csp, "unsafe") || w.Header().Get("X-Content-Type-Options") != "nosniff" || w.Header().Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%d answer's headers %v", w.Code, w.Header())
		}
	}

	js := get(t, h, http.MethodGet, "/viewer/a/"+v+"/main.js", nil)
	if js.Code != http.StatusOK || js.Header().Get("Content-Type") != "text/javascript; charset=utf-8" ||
		js.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" || js.Header().Get("ETag") == "" {
		t.Fatalf("main.js: %d %v", js.Code, js.Header())
	}
	if w := get(t, h, http.MethodGet, "/viewer/a/"+v+"/main.js", map[string]string{"If-None-Match": js.Header().Get("ETag")}); w.Code != http.StatusNotModified {
		t.Errorf("revalidation of an unchanged file: %d, want 304", w.Code)
	}
	if w := get(t, h, http.MethodGet, "/viewer/", map[string]string{"If-None-Match": page.Header().Get("ETag")}); w.Code != http.StatusNotModified {
		t.Errorf("revalidation of the unchanged page: %d, want 304", w.Code)
	}
	if w := get(t, h, http.MethodHead, "/viewer/", nil); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Errorf("HEAD: %d with %d bytes", w.Code, w.Body.Len())
	}
	for _, p := range []string{"/viewer/a/0000000000000000/main.js", "/viewer/main.js", "/viewer/a/" + v + "/nope.js", "/viewer/a/" + v + "/../index.html", "/viewer/static/main.js"} {
		if w := get(t, h, http.MethodGet, p, nil); w.Code != http.StatusNotFound || w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: %d %q, want 404 no-store", p, w.Code, w.Header().Get("Cache-Control"))
		}
	}
	if w := get(t, h, http.MethodPost, "/viewer/", nil); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", w.Code)
	}
}

// TestPageKeepsToItsPolicy reads the files themselves: the page has no
// inline script, style or event handler (the policy would block them), the
// scripts build no code from strings and no markup from text, and every
// file the page or a module names is one the handler serves.
func TestPageKeepsToItsPolicy(t *testing.T) {
	h := viewer.New()
	v := h.Version()
	files := os.DirFS("static")
	page, err := fs.ReadFile(files, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range regexp.MustCompile(`<script[^>]*>[^<]*</script>`).FindAll(page, -1) {
		if !regexp.MustCompile(`^<script [^>]*src="[^"]+"[^>]*></script>$`).Match(tag) {
			t.Errorf("index.html holds the inline script %q, which the policy refuses", tag)
		}
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<style`),
		regexp.MustCompile(`\sstyle=`),
		regexp.MustCompile(`\son[a-z]+=`),
		regexp.MustCompile(`(?:src|href)="(?:https?:)?//`),
	} {
		if m := bad.Find(page); m != nil {
			t.Errorf("index.html holds %q, which the policy refuses", m)
		}
	}
	named := regexp.MustCompile(`(?:src|href)="\{\{ASSETS\}\}/([^"]+)"`).FindAllSubmatch(page, -1)
	imports := regexp.MustCompile(`(?m)^import [^;]* from '\./([^']+)';`)
	seen := map[string]bool{}
	for _, n := range named {
		seen[string(n[1])] = true
	}
	entries, _ := fs.ReadDir(files, ".")
	for _, e := range entries {
		if path.Ext(e.Name()) != ".js" {
			continue
		}
		b, _ := fs.ReadFile(files, e.Name())
		for _, m := range imports.FindAllSubmatch(b, -1) {
			seen[string(m[1])] = true
		}
		for _, bad := range []string{"eval(", "new Function", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "setAttribute('style'", "http://", "https://"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s uses %s", e.Name(), bad)
			}
		}
	}
	if !seen["main.js"] || !seen["viewer.css"] {
		t.Fatalf("the page names %v", seen)
	}
	for name := range seen {
		if w := get(t, h, http.MethodGet, "/viewer/a/"+v+"/"+name, nil); w.Code != http.StatusOK {
			t.Errorf("%s is named but answers %d", name, w.Code)
		}
	}
}
