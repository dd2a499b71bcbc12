package mock

import (
	"fmt"
	"testing"
)

// admit runs one chat body through the cache as serveGeneration does.
func admit(s *Server, session, body string, out int) int {
	ls := &loopState{}
	st := &stream{outTokens: out, promptTotal: 1 << 30, wordSalt: 3}
	return s.admitPrefix(ls, &httpRequest{body: []byte(body), session: []byte(session)}, st)
}

func chat(msgs ...string) string {
	body := `{"messages":[`
	for i, m := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		if i > 0 {
			body += ","
		}
		body += fmt.Sprintf(`{"role":%q,"content":%q}`, role, m)
	}
	return body + `]}`
}

func TestPrefixCacheCachesHistoryAndAnswers(t *testing.T) {
	tok := NewMockTokenizer()
	s := &Server{cfg: Config{Tokenizer: tok}, prefix: newPrefixCache(PrefixCacheGlobal, 1_000_000)}
	first := "abcdefghij" // 10 byte tokens
	if got := admit(s, "a", chat(first), 2); got != 0 {
		t.Fatalf("first request: %d tokens cached; want 0", got)
	}
	// The mock's own answer (its words for salt 3) is cached with it.
	answer := (&stream{wordSalt: 3}).word(0) + (&stream{wordSalt: 3}).word(1)
	if got := admit(s, "a", chat(first, answer, "xyz"), 2); got != 10+2 {
		t.Errorf("second turn: %d cached; want the first question and the answer, 12", got)
	}
	if got := admit(s, "a", chat(first, "another answer", "xyz"), 2); got != 10 {
		t.Errorf("other answer: %d cached; want the first question only, 10", got)
	}
	if st := s.PrefixCache(); st.Hits != 22 || st.Queried < st.Hits {
		t.Errorf("stats %+v; want 22 hits", st)
	}
}

func TestPrefixCacheScopesAndEviction(t *testing.T) {
	tok := NewMockTokenizer()
	session := &Server{cfg: Config{Tokenizer: tok}, prefix: newPrefixCache(PrefixCacheSession, 1_000_000)}
	admit(session, "a", chat("abcdefghij"), 1)
	if got := admit(session, "b", chat("abcdefghij"), 1); got != 0 {
		t.Errorf("per-session cache: another session found %d tokens; want 0", got)
	}
	if got := admit(session, "a", chat("abcdefghij"), 1); got != 10 {
		t.Errorf("per-session cache: the same session found %d tokens; want 10", got)
	}
	small := &Server{cfg: Config{Tokenizer: tok}, prefix: newPrefixCache(PrefixCacheGlobal, 15)}
	admit(small, "", chat("abcdefghij"), 1)
	admit(small, "", chat("0123456789"), 1) // evicts the first
	if got := admit(small, "", chat("abcdefghij"), 1); got != 0 {
		t.Errorf("after eviction: %d cached; want 0", got)
	}
	if newPrefixCache(PrefixCacheOff, 10) != nil {
		t.Error("an off cache exists")
	}
	if _, err := ParsePrefixCache("sometimes"); err == nil {
		t.Error("ParsePrefixCache accepted a bad scope")
	}
}
