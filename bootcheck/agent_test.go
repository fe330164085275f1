package bootcheck

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWaitAgent: a fake guest agent behind the port's socket ignores the
// first guest-sync (not started yet), then answers; waitAgent reports it
// up. With no answer at all, it gives up when ctx ends.
func TestWaitAgent(t *testing.T) {
	for _, answers := range []bool{true, false} {
		sock := filepath.Join(t.TempDir(), "qga.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			sc := bufio.NewScanner(c)
			for n := 0; sc.Scan(); n++ {
				var req struct {
					Execute   string
					Arguments struct{ ID int }
				}
				if json.Unmarshal([]byte(strings.TrimLeft(sc.Text(), "\xff")), &req) != nil || n == 0 || !answers {
					continue
				}
				switch req.Execute {
				case "guest-sync":
					fmt.Fprintf(c, "{\"return\": %d}\n", req.Arguments.ID)
				case "guest-ping":
					fmt.Fprint(c, "{\"return\": {}}\n")
				}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		up := make(chan struct{}, 1)
		done := make(chan struct{})
		go func() { waitAgent(ctx, sock, up); close(done) }()
		if answers {
			select {
			case <-up:
			case <-ctx.Done():
				t.Fatal("the agent's answer was not seen")
			}
		} else {
			time.Sleep(2500 * time.Millisecond)
			if len(up) != 0 {
				t.Fatal("up without an answer")
			}
		}
		cancel()
		<-done
	}
}
