package mcpserve

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// callerExtra is the key of the caller in the SDK's token info.
const callerExtra = "mcpserve.caller"

// placeholderBearer stands in, for the SDK's bearer middleware only, for
// the Authorization a request may lack; the request the SDK's handler
// sees carries what its client sent.
const placeholderBearer = "Bearer caller"

type sentAuthorization struct{}

// withCaller attaches what caller says of each request (HTTPOptions.Caller)
// to the calls it carries (Call.Caller). The SDK takes a request's
// identity (its token info) from its bearer middleware alone, and that
// middleware wants a bearer: the request is shown to it with a stand-in
// one, and what its client sent (a token, or nothing) is put back before
// the SDK's handler reads the headers. The stand-in is never checked;
// the program mounting the handler authenticated the request before.
func withCaller(h http.Handler, caller func(*http.Request) (user string, c any)) http.Handler {
	if caller == nil {
		return h
	}
	restore := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Authorization")
		for _, v := range r.Context().Value(sentAuthorization{}).([]string) {
			r.Header.Add("Authorization", v)
		}
		h.ServeHTTP(w, r)
	})
	verify := func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		user, c := caller(r)
		return &auth.TokenInfo{UserID: user, Extra: map[string]any{callerExtra: c}}, nil
	}
	mw := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(restore)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent := append([]string(nil), r.Header.Values("Authorization")...)
		r = r.WithContext(context.WithValue(r.Context(), sentAuthorization{}, sent))
		r.Header = r.Header.Clone() // the caller's request keeps its own headers
		r.Header.Set("Authorization", placeholderBearer)
		mw.ServeHTTP(w, r)
	})
}

// callerOf is the caller withCaller attached, if any.
func callerOf(ti *auth.TokenInfo) any {
	if ti == nil {
		return nil
	}
	return ti.Extra[callerExtra]
}
