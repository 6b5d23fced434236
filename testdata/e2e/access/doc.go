// Package access tests access control and sign-in end to end: access files
// and tokens with real clients, the token verbs, single sign-on against
// Dex (the real identity provider), login in the browser, and attacks on
// all of them (spoofed forwarding headers, revoked tokens, a full disk
// under the audit log).
package access
