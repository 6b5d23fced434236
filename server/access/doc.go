// Package access is who may fetch what from the appliance: it enforces an
// access file (package acl: tokens, their rules, an anonymous rule, a login
// block) on every request the server's route table says needs it, and runs
// the single sign-on that makes people's login tokens.
//
// What it holds:
//   - AccessControl: the access file compiled into principals, re-read when
//     it changes; Admit finds a request's principal (a Bearer or Basic
//     token, the catalog's session cookie, a signed download URL, an OCI
//     bearer from /v2/token, or the anonymous rule) or refuses it with the
//     answer each kind of client expects; failed attempts are limited per
//     client address (TrustedProxies says who the client is);
//   - the signed download URLs and OCI bearers (urlKeys in STORE/tls,
//     rotatable), which bind the token's hash, so a revoked token's URLs
//     stop working at once;
//   - LoginService: the OAuth 2.0 server of 'terraform login' and the
//     catalog's sign-in, as an OpenID Connect relying party of the site's
//     identity provider; the login tokens it issues live in
//     STORE/state/logins, shared by replicas;
//   - the audit log (AuditLog: downloads, logins, token changes, refusals,
//     shared by replicas) and its summary ('airgap audit');
//   - the request's Note, what it tells the access log.
//
// It does not decide what a principal sees of the catalog (the server's
// scopes filter the catalog by the principal's rules, and answer a denied
// address as a missing one), does not route, and never logs, counts or
// echoes a secret: logs and the audit name the token.
package access
