package managed

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"
)

// A Pub/Sub push subscription authenticates its pushes with an OpenID Connect token ("Authenticate
// push subscriptions"): Authorization: Bearer <JWT>, signed RS256 by Google, with iss
// https://accounts.google.com, aud the configured audience (the endpoint URL by default), email
// the subscription's service account and email_verified true. PushVerifier checks those against
// Google's published keys (a JWKS document), or — where a token cannot be used — a shared secret
// carried in the push endpoint's URL (?token=…), compared in constant time.

// GoogleCertsURL publishes the keys Google signs OIDC tokens with.
const GoogleCertsURL = "https://www.googleapis.com/oauth2/v3/certs"

// PushAuth configures push authentication; set the OIDC fields, the secret, or both.
type PushAuth struct {
	// Audience is the aud the tokens must carry.
	Audience string
	// ServiceAccountEmail, when set, is the email the tokens must carry (the push
	// subscription's --push-auth-service-account).
	ServiceAccountEmail string
	// Keys returns the signing keys by key ID (see JWKSKeys).
	Keys func(ctx context.Context, kid string) (*rsa.PublicKey, error)
	// Secret, when set, is accepted as the token query parameter of the push URL.
	Secret []byte
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Errors of push authentication.
var (
	ErrNoCredentials  = errors.New("no push credentials")
	ErrBadCredentials = errors.New("push credentials refused")
)

// googleIssuers are the iss values Google's OIDC tokens carry.
var googleIssuers = []string{"https://accounts.google.com", "accounts.google.com"}

// clockSkew is the leeway on exp, iat and nbf.
const clockSkew = 2 * time.Minute

// PushVerifier checks push credentials. Tokens that verified are remembered until they expire
// (a subscription reuses its token for many pushes), in a bounded cache, so a push costs an RSA
// verification only when its token is new.
type PushVerifier struct {
	cfg   PushAuth
	mu    sync.Mutex
	cache map[[32]byte]time.Time // token digest → expiry
}

// maxCachedTokens bounds the verified-token cache.
const maxCachedTokens = 64

// NewPushVerifier checks cfg.
func NewPushVerifier(cfg PushAuth) (*PushVerifier, error) {
	if cfg.Keys == nil && len(cfg.Secret) == 0 {
		return nil, errors.New("push auth: an OIDC audience with keys, or a shared secret, is required")
	}
	if cfg.Keys != nil && cfg.Audience == "" {
		return nil, errors.New("push auth: OIDC tokens need an audience")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &PushVerifier{cfg: cfg, cache: map[[32]byte]time.Time{}}, nil
}

// Verify checks the push request's credentials: ErrNoCredentials when it presents none,
// ErrBadCredentials (wrapped with the cause) when they are refused.
func (v *PushVerifier) Verify(r *http.Request) error {
	presented := false
	if len(v.cfg.Secret) > 0 {
		if tok := r.URL.Query().Get("token"); tok != "" {
			presented = true
			if subtle.ConstantTimeCompare([]byte(tok), v.cfg.Secret) == 1 {
				return nil
			}
		}
	}
	if v.cfg.Keys != nil {
		if h := r.Header.Get("Authorization"); h != "" {
			tok, ok := strings.CutPrefix(h, "Bearer ")
			if !ok {
				return fmt.Errorf("%w: authorization is not a bearer token", ErrBadCredentials)
			}
			if err := v.verifyToken(r.Context(), strings.TrimSpace(tok)); err != nil {
				return fmt.Errorf("%w: %w", ErrBadCredentials, err)
			}
			return nil
		}
	}
	if presented {
		return fmt.Errorf("%w: wrong token in the push URL", ErrBadCredentials)
	}
	return ErrNoCredentials
}

// maxTokenBytes bounds a token: Google's are about 1 KB.
const maxTokenBytes = 8 << 10

type jwtHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
}

type jwtClaims struct {
	Iss           string          `json:"iss"`
	Aud           json.RawMessage `json:"aud"`
	Email         string          `json:"email"`
	EmailVerified bool            `json:"email_verified"`
	Exp           int64           `json:"exp"`
	Iat           int64           `json:"iat"`
	Nbf           int64           `json:"nbf"`
}

// verifyToken checks an OIDC token's signature and claims.
func (v *PushVerifier) verifyToken(ctx context.Context, tok string) error {
	if len(tok) > maxTokenBytes {
		return errors.New("token too long")
	}
	now := v.cfg.Now()
	digest := sha256.Sum256([]byte(tok))
	v.mu.Lock()
	exp, ok := v.cache[digest]
	v.mu.Unlock()
	if ok && now.Before(exp.Add(clockSkew)) {
		return nil
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return errors.New("not a JWT")
	}
	var hdr jwtHeader
	if err := decodeSegment(parts[0], &hdr); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if hdr.Alg != "RS256" {
		return fmt.Errorf("algorithm %q, want RS256", hdr.Alg)
	}
	key, err := v.cfg.Keys(ctx, hdr.Kid)
	if err != nil {
		return fmt.Errorf("key %q: %w", hdr.Kid, err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return errors.New("signature is not base64url")
	}
	h := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, h[:], sig); err != nil {
		return errors.New("bad signature")
	}
	var c jwtClaims
	if err := decodeSegment(parts[1], &c); err != nil {
		return fmt.Errorf("claims: %w", err)
	}
	switch {
	case !contains(googleIssuers, c.Iss):
		return fmt.Errorf("issuer %q is not Google", c.Iss)
	case !audienceIs(c.Aud, v.cfg.Audience):
		return fmt.Errorf("audience is not %q", v.cfg.Audience)
	case v.cfg.ServiceAccountEmail != "" && (c.Email != v.cfg.ServiceAccountEmail || !c.EmailVerified):
		return fmt.Errorf("email %q (verified %t), want %q", c.Email, c.EmailVerified, v.cfg.ServiceAccountEmail)
	case c.Exp == 0 || now.After(time.Unix(c.Exp, 0).Add(clockSkew)):
		return errors.New("token expired")
	case c.Iat > 0 && time.Unix(c.Iat, 0).After(now.Add(clockSkew)), c.Nbf > 0 && time.Unix(c.Nbf, 0).After(now.Add(clockSkew)):
		return errors.New("token not valid yet")
	}
	v.mu.Lock()
	if len(v.cache) >= maxCachedTokens {
		for k, e := range v.cache {
			if !now.Before(e) {
				delete(v.cache, k)
			}
		}
		if len(v.cache) >= maxCachedTokens {
			clear(v.cache) // more live tokens than subscriptions have: start over
		}
	}
	v.cache[digest] = time.Unix(c.Exp, 0)
	v.mu.Unlock()
	return nil
}

func decodeSegment(seg string, into any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return errors.New("not base64url")
	}
	return json.Unmarshal(b, into)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// audienceIs reports whether aud (a string, or an array of strings) names want.
func audienceIs(aud json.RawMessage, want string) bool {
	var one string
	if json.Unmarshal(aud, &one) == nil {
		return one == want
	}
	var many []string
	if json.Unmarshal(aud, &many) == nil {
		return contains(many, want)
	}
	return false
}

// JWKS is a set of RSA signing keys by key ID, parsed from a JSON Web Key Set document.
type JWKS map[string]*rsa.PublicKey

// ParseJWKS reads the RSA keys of a JWKS document.
func ParseJWKS(doc []byte) (JWKS, error) {
	var set struct {
		Keys []struct {
			Kty, Kid, N, E string
		} `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		return nil, fmt.Errorf("parse jwks: %w", err)
	}
	keys := JWKS{}
	for _, k := range set.Keys {
		if k.Kty != "RSA" {
			continue
		}
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if err1 != nil || err2 != nil || len(e) > 4 || len(n) < 256 {
			return nil, fmt.Errorf("parse jwks: key %q is not a usable RSA key", k.Kid)
		}
		keys[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	if len(keys) == 0 {
		return nil, errors.New("parse jwks: no RSA key")
	}
	return keys, nil
}

// KeySource serves signing keys from a JWKS document fetched from a URL (Google's by default),
// refetched every Refresh and when a token names a key it does not know (Google rotates its
// keys). It fetches at most once a minute (every 5 s until a first fetch succeeds), whether
// the fetch succeeds or not: while the URL is unreachable, the keys it has keep serving, and
// tokens naming other keys (anyone can send one) are refused at once rather than each waiting
// for a fetch of its own.
type KeySource struct {
	URL     string
	Client  *http.Client
	Refresh time.Duration
	Now     func() time.Time

	mu        sync.Mutex
	keys      JWKS
	fetched   time.Time // the last fetch that succeeded
	attempted time.Time // the last fetch
	err       error     // why the last fetch failed
}

// maxJWKSBytes bounds the fetched document.
const maxJWKSBytes = 1 << 20

// Key returns the key with ID kid.
func (s *KeySource) Key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	refresh := s.Refresh
	if refresh <= 0 {
		refresh = time.Hour
	}
	stale := s.keys == nil || now().Sub(s.fetched) > refresh
	if k, ok := s.keys[kid]; ok && !stale {
		return k, nil
	}
	gap := time.Minute
	if s.keys == nil {
		gap = 5 * time.Second
	}
	if s.attempted.IsZero() || now().Sub(s.attempted) >= gap {
		s.attempted = now()
		s.err = s.fetch(ctx, now())
	}
	if k, ok := s.keys[kid]; ok {
		return k, nil
	}
	if s.keys == nil {
		return nil, s.err
	}
	return nil, errors.New("unknown key")
}

func (s *KeySource) fetch(ctx context.Context, now time.Time) error {
	client := s.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return fmt.Errorf("fetch jwks: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("fetch jwks: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch jwks: %s", resp.Status)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(resp.Body, maxJWKSBytes+1)); err != nil {
		return fmt.Errorf("fetch jwks: %w", err)
	}
	if buf.Len() > maxJWKSBytes {
		return errors.New("fetch jwks: document too large")
	}
	keys, err := ParseJWKS(buf.Bytes())
	if err != nil {
		return err
	}
	s.keys, s.fetched = keys, now
	return nil
}

// Key returns the key with ID kid from a fixed set.
func (k JWKS) Key(_ context.Context, kid string) (*rsa.PublicKey, error) {
	if key, ok := k[kid]; ok {
		return key, nil
	}
	return nil, errors.New("unknown key")
}
