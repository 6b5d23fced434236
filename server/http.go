package server

import (
	"crypto/tls"
	"log/slog"
	"net/http"
	"time"

	"github.com/airgap/airgap/server/access"
)

// The limits NewHTTPServer sets.
const (
	// ReadHeaderTimeout bounds the TLS handshake and each request's line and
	// headers, counted from the connection's start for the first request
	// and from the first byte of the request for later ones.
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// connection (nginx's keepalive_timeout is 75 s; terraform and tofu
	// reuse a connection within seconds or not at all).
	IdleTimeout = 60 * time.Second
	// MaxHeaderBytes bounds a request's line and headers (net/http allows
	// 4 KiB of slack above it and answers 431 beyond).
	MaxHeaderBytes = 32 << 10
)

// NewHTTPServer returns net/http's server configured for the appliance:
//
//   - HTTP/1.1 only (an empty, non-nil TLSNextProto): measured on loopback,
//     Go's HTTP/2 server moved a 256 MiB package at about half the speed of
//     HTTP/1.1 (442 vs 864 MiB/s), and registry clients gain nothing from
//     multiplexing a handful of requests. ServeTLS then offers "http/1.1"
//     in ALPN and never "h2"; other protocols in the TLS config (ACME's
//     acme-tls/1) stay.
//   - ReadHeaderTimeout, IdleTimeout and MaxHeaderBytes as above.
//   - No ReadTimeout: it would also bound the background read net/http keeps
//     on the connection while a handler runs, and so cancel the request
//     context of every download longer than it. Requests carry no body
//     here (but the login service's two small forms, read under their own
//     deadline: formPOST), and one that does is answered and its connection
//     closed without reading the body (see noBodies), so nothing else reads
//     after the headers.
//   - No WriteTimeout: a multi-gigabyte package to a slow client must
//     finish. A client that stops reading is closed by the listener
//     instead (LimitConns' SendTimeout: no write progress for 60 s).
//
// The connections themselves are bounded by the listener serve gives it
// (LimitConns: max-conns in total, max-conns-per-ip per client address).
// Worst case with the defaults: 2,048 connections open, each one file
// descriptor and about 50 KiB of memory (measured: 3,000 idle TLS
// connections took 154 MiB), so about 2,050 descriptors (the unit's
// LimitNOFILE is 65,536) and 100 MiB, held for at most IdleTimeout when
// idle, ReadHeaderTimeout before a request is complete, and SendTimeout
// when a client stops reading; one client address (a /64 for IPv6) holds at
// most 128 of them, so filling the total takes 16 addresses.
//
// Serve it with ServeTLS(ln, "", "") and TLSConfig set (ServeTLS answers
// plain HTTP on the TLS port with a 400 that says so), and stop it with
// Shutdown, which closes idle connections and waits for downloads in
// flight. Its errors (failed handshakes, say) go to log at debug level.
func NewHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           noBodies(h),
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}

// noBodies answers a request that carries a body (a Content-Length above
// zero, or chunked) as if it had none, then closes its connection without
// reading the body: net/http would otherwise read up to 256 KiB of it
// after the answer, with no deadline (there is no ReadTimeout), so a client
// could hold the connection forever by announcing a body and never sending
// it. The read deadline is set in the past, so that read fails at once, and
// "Connection: close" keeps the unread bytes from being taken for the next
// request.
func noBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 && !formPOST(r) {
			w.Header().Set("Connection", "close")
			http.NewResponseController(w).SetReadDeadline(time.Unix(1, 0))
		}
		h.ServeHTTP(w, r)
	})
}

// formPOST reports whether r is one of the requests that carry a body:
// the login service's token request, sign-out and consent, a form of a declared
// length of at most 16 KiB, which they read under a 10 s deadline
// (readForm).
func formPOST(r *http.Request) bool {
	return r.Method == http.MethodPost && r.ContentLength > 0 && r.ContentLength <= access.MaxForm &&
		(r.URL.Path == access.TokenPath || r.URL.Path == access.SignOutPath || r.URL.Path == access.ConsentPath)
}

// HTTP1Only makes a TLS config's ALPN list match NewHTTPServer: "http/1.1"
// first, no "h2", and anything else (ACME's acme-tls/1) kept.
func HTTP1Only(c *tls.Config) {
	protos := []string{"http/1.1"}
	for _, p := range c.NextProtos {
		if p != "h2" && p != "http/1.1" {
			protos = append(protos, p)
		}
	}
	c.NextProtos = protos
}
