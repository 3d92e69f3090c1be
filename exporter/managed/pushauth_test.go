package managed

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func jwksOf(kid string, k *rsa.PublicKey) string {
	return fmt.Sprintf(`{"keys":[{"kty":"RSA","kid":%q,"n":%q,"e":%q}]}`, kid,
		base64.RawURLEncoding.EncodeToString(k.N.Bytes()), base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes()))
}

func sign(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	seg := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	in := seg(map[string]any{"alg": "RS256", "kid": kid}) + "." + seg(claims)
	h := sha256.Sum256([]byte(in))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, h[:])
	if err != nil {
		t.Fatal(err)
	}
	return in + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestPushVerifierFetchesRotatedKeysAndCachesTokens(t *testing.T) {
	k1, _ := rsa.GenerateKey(rand.Reader, 2048)
	k2, _ := rsa.GenerateKey(rand.Reader, 2048)
	var doc atomic.Value
	doc.Store(jwksOf("k1", &k1.PublicKey))
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		_, _ = w.Write([]byte(doc.Load().(string)))
	}))
	defer srv.Close()
	now := time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	keys := &KeySource{URL: srv.URL, Now: clock}
	v, err := NewPushVerifier(PushAuth{Audience: "aud", ServiceAccountEmail: "sa@p.iam.gserviceaccount.com", Keys: keys.Key, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]any{"iss": "accounts.google.com", "aud": "aud", "email": "sa@p.iam.gserviceaccount.com", "email_verified": true,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	push := func(tok string) error {
		r := httptest.NewRequest(http.MethodPost, "/pubsub", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return v.Verify(r)
	}
	tok1 := sign(t, k1, "k1", claims)
	for range 3 {
		if err := push(tok1); err != nil {
			t.Fatal(err)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d fetches for one key, want 1", n)
	}
	// Google rotates: a token signed by a new key makes the verifier fetch again (at most once a
	// minute), and the old cached token stays good until it expires.
	doc.Store(jwksOf("k2", &k2.PublicKey))
	now = now.Add(2 * time.Minute)
	if err := push(sign(t, k2, "k2", claims)); err != nil {
		t.Errorf("a token of the rotated key: %v", err)
	}
	if err := push(tok1); err != nil {
		t.Errorf("a cached token: %v", err)
	}
	now = now.Add(2 * time.Hour)
	if err := push(tok1); !errors.Is(err, ErrBadCredentials) {
		t.Errorf("an expired cached token: %v, want refused", err)
	}
	if _, err := keys.Key(context.Background(), "k3"); err == nil {
		t.Errorf("an unknown key was found")
	}
	// alg none and HMAC tokens are refused whatever they claim.
	noneTok := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + base64.RawURLEncoding.EncodeToString([]byte(`{}`)) + "."
	if err := push(noneTok); !errors.Is(err, ErrBadCredentials) {
		t.Errorf("alg none: %v", err)
	}
	if err := v.Verify(httptest.NewRequest(http.MethodPost, "/pubsub", nil)); !errors.Is(err, ErrNoCredentials) {
		t.Errorf("no credentials: %v", err)
	}
}

// While the key URL fails, the keys fetched before keep serving, and tokens naming unknown keys
// (anyone can send them) do not each wait for a fetch: one attempt a minute, whatever its outcome.
func TestKeySourceFetchesAtMostOnceAMinuteWhileTheURLFails(t *testing.T) {
	k1, _ := rsa.GenerateKey(rand.Reader, 2048)
	var failing atomic.Bool
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		if failing.Load() {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(jwksOf("k1", &k1.PublicKey)))
	}))
	defer srv.Close()
	now := time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)
	keys := &KeySource{URL: srv.URL, Now: func() time.Time { return now }}
	ctx := context.Background()
	if _, err := keys.Key(ctx, "k1"); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	now = now.Add(2 * time.Hour) // the keys are due for a refresh, which fails
	for i := range 50 {
		if _, err := keys.Key(ctx, "k1"); err != nil {
			t.Fatalf("the fetched key, call %d: %v", i, err)
		}
		if _, err := keys.Key(ctx, fmt.Sprintf("forged-%d", i)); err == nil {
			t.Fatal("an unknown key was found")
		}
	}
	if n := fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2 (the first, one refresh attempt)", n)
	}
	now = now.Add(time.Minute)
	failing.Store(false)
	if _, err := keys.Key(ctx, "forged"); err == nil {
		t.Fatal("an unknown key was found")
	}
	if n := fetches.Load(); n != 3 {
		t.Fatalf("%d fetches after a minute, want 3", n)
	}
}

// A source that never fetched retries every 5 s, and says why it has no keys.
func TestKeySourceWithoutKeysRetriesEvery5s(t *testing.T) {
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	now := time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)
	keys := &KeySource{URL: srv.URL, Now: func() time.Time { return now }}
	for range 10 {
		if _, err := keys.Key(context.Background(), "k1"); err == nil || !strings.Contains(err.Error(), "503") {
			t.Fatalf("error %v, want the fetch's", err)
		}
	}
	now = now.Add(5 * time.Second)
	_, _ = keys.Key(context.Background(), "k1")
	if n := fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
}
