// Package adminpage proves the admin page in a real browser: headless Chromium, driven over
// the DevTools protocol (github.com/chromedp/chromedp), signs in to the page that Weir serves
// through a real Traefik and uses it as an operator would: it sees the breaker that a failing
// origin opened, closes it, tunes it, and purges a surrogate key, and the test checks through
// Traefik that each action took effect.
//
// The test needs Chromium (WEIR_CHROMIUM, else chromium on PATH, else /usr/bin/chromium) and
// Traefik v3.6.12 (as package github.com/weirproxy/weir/e2e finds it). Without them it skips,
// unless WEIR_E2E=required, in which case it fails. Run with -update-screenshot, it writes the
// page's screenshot to testdata/admin/page.png at the repository's root, which the README
// shows.
package adminpage
