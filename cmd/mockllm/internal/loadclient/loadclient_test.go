package loadclient

import (
	"context"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

func TestLoadAgainstMock(t *testing.T) {
	srv, err := mock.Start(mock.Config{ITL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := Start(ctx, Config{
		Addr: srv.Addr(), Conns: 20, Path: "/v1/completions",
		Body:   []byte(`{"prompt":"a","max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`),
		Spread: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	for c.Stats().Streams < 60 {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	c.Wait()
	st := c.Stats()
	// Every finished stream is 5 tokens + usage + [DONE]; the ones cut off
	// by cancel add fewer.
	finished := st.Streams - 20
	if st.Streams < 60 || st.Errors != 0 || st.Events < finished*7 || st.Events > st.Streams*7 || st.Open != 0 {
		t.Errorf("stats %+v", st)
	}
}
