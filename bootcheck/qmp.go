package bootcheck

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"
)

// qmpClient speaks the QEMU Machine Protocol on a Unix socket: one
// command at a time; the events QEMU sends go to Events (up to 64
// queued; more are dropped).
type qmpClient struct {
	conn    net.Conn
	mu      sync.Mutex // one command at a time
	replies chan qmpMessage
	Events  chan string // event names: "SHUTDOWN", "RESET", "STOP"…
	done    chan struct{}
}

type qmpMessage struct {
	Return json.RawMessage `json:"return"`
	Error  *struct {
		Class string `json:"class"`
		Desc  string `json:"desc"`
	} `json:"error"`
	Event string          `json:"event"`
	QMP   json.RawMessage `json:"QMP"`
}

// dialQMP connects to the QMP socket at path, retrying until ctx is done
// (QEMU creates it while it starts), reads the greeting and leaves
// capabilities negotiation mode.
func dialQMP(ctx context.Context, path string) (*qmpClient, error) {
	var conn net.Conn
	for {
		var err error
		if conn, err = (&net.Dialer{}).DialContext(ctx, "unix", path); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("QMP socket %s: %w", path, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	c := &qmpClient{conn: conn, replies: make(chan qmpMessage, 1), Events: make(chan string, 64), done: make(chan struct{})}
	greeting := make(chan error, 1)
	go c.read(greeting)
	select {
	case err := <-greeting:
		if err != nil {
			conn.Close()
			return nil, err
		}
	case <-ctx.Done():
		conn.Close()
		return nil, fmt.Errorf("QMP greeting: %w", ctx.Err())
	}
	if _, err := c.execute(ctx, "qmp_capabilities", nil); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// read decodes QMP messages until the connection ends: the greeting is
// said on greeting, replies go to replies, events to Events.
func (c *qmpClient) read(greeting chan<- error) {
	defer close(c.done)
	dec := json.NewDecoder(bufio.NewReader(c.conn))
	first := true
	for {
		var m qmpMessage
		if err := dec.Decode(&m); err != nil {
			if first {
				greeting <- fmt.Errorf("QMP greeting: %w", err)
			}
			return
		}
		switch {
		case first:
			first = false
			if m.QMP == nil {
				greeting <- fmt.Errorf("QMP greeting: not a QMP server")
				return
			}
			greeting <- nil
		case m.Event != "":
			select {
			case c.Events <- m.Event:
			default:
			}
		default:
			c.replies <- m
		}
	}
}

// execute runs command with args (nil: none) and returns its "return"
// value, or the error QEMU replied with.
func (c *qmpClient) execute(ctx context.Context, command string, args any) (json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	req := map[string]any{"execute": command}
	if args != nil {
		req["arguments"] = args
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	c.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.conn.Write(b); err != nil {
		return nil, fmt.Errorf("QMP %s: %w", command, err)
	}
	select {
	case m := <-c.replies:
		if m.Error != nil {
			return nil, fmt.Errorf("QMP %s: %s: %s", command, m.Error.Class, m.Error.Desc)
		}
		return m.Return, nil
	case <-c.done:
		return nil, fmt.Errorf("QMP %s: connection closed", command)
	case <-ctx.Done():
		return nil, fmt.Errorf("QMP %s: %w", command, ctx.Err())
	}
}

// Close closes the connection.
func (c *qmpClient) Close() error { return c.conn.Close() }
