package access

import (
	"html/template"
	"net/http"
)

// The catalog's sign-in page. A browser asks for Basic credentials the
// moment a 401 carries a Basic challenge, and its prompt cannot say what
// to type. So a browser that presents no token first gets this page, with
// a challenge it does not prompt for (Bearer): it says how to sign in (any
// user name, the token as the password) and links to "/?signin", whose
// Basic challenge makes the browser ask. Credentials that fail (a wrong or
// expired token) get the Basic challenge at once, so that the browser asks
// again, with the same page behind it (shown on Cancel) and the reason.

// catalogRealm is the Basic realm: some browsers show it in their prompt.
const catalogRealm = `Basic realm="airgap catalog: any user name, your token as the password", charset="UTF-8"`

var signInPage = template.Must(template.New("signin").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in – airgap catalog</title>
</head>
<body>
<main>
<h1>Sign in to the airgap catalog</h1>
{{if .Why}}<p id="why">{{.Why}}</p>
{{end}}<p id="how">This appliance shows its catalog to token holders only. When your browser asks for a user name and a password, give <strong>any user name</strong>, and <strong>your token as the password</strong>: the secret starting with <code>airgap_</code> that <code>airgap token create</code> printed once (the appliance's operator gives you one).</p>
<p><a id="signin" href="/?signin">Sign in with a token</a></p>
</main>
</body>
</html>
`))

// refuseCatalog answers a catalog page (isUIPath) that f refused; why is
// the reason for credentials that were presented and failed.
func refuseCatalog(w http.ResponseWriter, r *http.Request, f *authFail, why string) {
	h := w.Header()
	if f.reason == authMissing {
		why = "" // the reason a CLI client gets; the page says it for browsers
	}
	if f.reason != authMissing || (r.URL.Path == "/" && r.URL.RawQuery == "signin") {
		h.Set("Www-Authenticate", catalogRealm)
	} else {
		h.Set("Www-Authenticate", `Bearer realm="airgap catalog"`)
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	w.WriteHeader(http.StatusUnauthorized)
	if r.Method != http.MethodHead {
		signInPage.Execute(w, struct{ Why string }{why})
	}
}
