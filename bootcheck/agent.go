package bootcheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// agentPollInterval is how often the guest agent is asked again.
const agentPollInterval = time.Second

// waitAgent asks the QEMU guest agent behind the chardev socket path
// (guest-sync with a fresh id, then guest-ping) until it answers or ctx
// is done, and reports its first answer on up. Before the agent runs,
// the port takes the requests and nothing answers: each try waits
// agentPollInterval; answers to older ids are skipped.
func waitAgent(ctx context.Context, path string, up chan<- struct{}) {
	var conn net.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	var rd *bufio.Reader
	for id := 1; ctx.Err() == nil; id++ {
		if conn == nil {
			c, err := (&net.Dialer{}).DialContext(ctx, "unix", path)
			if err != nil {
				sleepCtx(ctx, agentPollInterval)
				continue
			}
			conn, rd = c, bufio.NewReader(c)
		}
		if err := agentAsk(conn, rd, id); err == nil {
			up <- struct{}{}
			return
		} else if !isTimeout(err) {
			conn.Close()
			conn = nil
			sleepCtx(ctx, agentPollInterval)
		}
	}
}

// agentAsk sends guest-sync id and, once it is echoed, guest-ping; it
// returns nil when the ping is answered.
func agentAsk(conn net.Conn, rd *bufio.Reader, id int) error {
	conn.SetDeadline(time.Now().Add(agentPollInterval))
	// 0xFF makes a running agent drop any partial request first.
	if _, err := fmt.Fprintf(conn, "\xff{\"execute\":\"guest-sync\",\"arguments\":{\"id\":%d}}\n", id); err != nil {
		return err
	}
	for {
		line, err := rd.ReadBytes('\n')
		if err != nil {
			return err
		}
		var m struct {
			Return json.RawMessage `json:"return"`
		}
		if json.Unmarshal(bytes.TrimLeft(line, "\xff"), &m) != nil || string(m.Return) != fmt.Sprint(id) {
			continue // garbage, or the answer to an earlier try
		}
		break
	}
	if _, err := fmt.Fprint(conn, "{\"execute\":\"guest-ping\"}\n"); err != nil {
		return err
	}
	line, err := rd.ReadBytes('\n')
	if err != nil {
		return err
	}
	var m struct {
		Return json.RawMessage `json:"return"`
	}
	if err := json.Unmarshal(line, &m); err != nil || m.Return == nil {
		return fmt.Errorf("guest agent: unexpected answer to guest-ping")
	}
	return nil
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
