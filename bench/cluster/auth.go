package cluster

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// The agents of a run prove to each other that they hold the cluster
// token (--cluster-token, --cluster-token-file or $STAMPEDE_CLUSTER_TOKEN)
// with HMAC-SHA256 keyed by it, never sending the token itself:
//
//	hello  MAC over "stampede-hello", the run's nonce, the connection's
//	       challenge and the hello's fields (its digests among them)
//	start  MAC over "stampede-start", both nonces and the start's fields
//	result MAC over "stampede-result", the run's nonce, the agent's index,
//	       the frame's number in the agent's result stream and its bytes
//
// The run's nonce is drawn by agent 0 for this run and the challenge for
// this connection, so a hello or a partial recorded from another run or
// connection does not verify. A cluster run on loopback alone may run
// without a token: the MACs are then keyed by the empty token, which keeps
// a stray or replayed hello out but proves nothing about who sent it.

// nonceLen is the length of the run's nonce and of a challenge.
const nonceLen = 32

// newNonce draws a random nonce.
func newNonce() []byte {
	b := make([]byte, nonceLen)
	rand.Read(b) // never fails (crypto/rand)
	return b
}

// ReadTokenFile reads the cluster token from path (--cluster-token-file,
// a Kubernetes Secret mounted as a file): the file's text without its
// surrounding white space, which must not be empty.
func ReadTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--cluster-token-file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("--cluster-token-file %s: the file is empty; want the cluster's shared secret", path)
	}
	return tok, nil
}

// mac is HMAC-SHA256 keyed by token over label, then each part with its
// length before it (so that no two sequences of parts give one input).
func mac(token, label string, parts ...[]byte) []byte {
	h := hmac.New(sha256.New, []byte(token))
	h.Write([]byte(label))
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	return h.Sum(nil)
}

// helloMAC is the MAC of h (its MAC field left out) on the connection
// whose nonces are runNonce and challenge.
func helloMAC(token string, runNonce, challenge []byte, h clusterHello) string {
	h.MAC = ""
	body, _ := json.Marshal(h)
	return hex.EncodeToString(mac(token, "stampede-hello", runNonce, challenge, body))
}

// startMAC is the MAC of st (its MAC field left out) on that connection.
func startMAC(token string, runNonce, challenge []byte, st clusterStart) string {
	st.MAC = ""
	body, _ := json.Marshal(st)
	return hex.EncodeToString(mac(token, "stampede-start", runNonce, challenge, body))
}

// resultMAC is the MAC of result frame seq (from 0) of agent index in the
// run of runNonce, over the frame's body: the parts, one after the other,
// as mac takes one part of their bytes.
func resultMAC(token string, runNonce []byte, index int, seq uint64, body ...[]byte) []byte {
	var ix, sq [8]byte
	binary.BigEndian.PutUint64(ix[:], uint64(index))
	binary.BigEndian.PutUint64(sq[:], seq)
	h := hmac.New(sha256.New, []byte(token))
	h.Write([]byte("stampede-result"))
	var n [8]byte
	for _, p := range [][]byte{runNonce, ix[:], sq[:]} {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	total := 0
	for _, p := range body {
		total += len(p)
	}
	binary.BigEndian.PutUint64(n[:], uint64(total))
	h.Write(n[:])
	for _, p := range body {
		h.Write(p)
	}
	return h.Sum(nil)
}

// equalMAC compares a received hex MAC with the expected one in constant
// time.
func equalMAC(got, want string) bool {
	return hmac.Equal([]byte(got), []byte(want))
}
