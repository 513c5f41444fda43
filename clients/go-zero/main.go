// A lockharness client (docs/client-protocol.md) that translates the protocol to
// zeromicro/go-zero's core/stores/redis RedisLock: one lock on the first node (nodes[0]),
// exactly as the library does it, with nothing added. Not Redlock: like redisson-rlock,
// the other nodes are not used.
//
// The same source builds against go-zero v1.3.1 and later (lockharness's go-zero@VERSION),
// so it uses only the API those share: redis.New(addr), NewRedisLock(store, key),
// SetExpire(seconds), Acquire() (bool, error), Release() (bool, error); not AcquireCtx.
//
// It speaks protocol 2 (and 1, for a worker that offers only 1): a certain failure is
// `refused` with the reason (version 1: `granted: false`).
//
// Mapping of go-zero's outcomes (core/stores/redis/redislock.go):
//
//	acquire(key, ttl_ms): a NEW RedisLock per acquire, SetExpire(ttl_ms/1000) (the
//	  library's TTL is whole seconds; the harness sends only multiples of 1000, as the
//	  client's ttl_step_ms says, and any other ttl_ms is an error reply here), then
//	  Acquire(). The library stores the key with its own tolerance on top (v1.3.1:
//	  SETNX EX seconds+1; v1.3.2 on: a Lua SET NX PX seconds*1000+500).
//	  true -> granted. The token is the value the library wrote: RedisLock keeps its
//	  random id private and has no accessor in any version, so the program reads it back
//	  with a GET of the key through the same redis store the library uses (its client,
//	  its breaker), right after the grant; it generates nothing of its own. A GET that
//	  fails, or finds the key gone, is an `error` (the lock was granted, its token is not
//	  known). validity_ms = ttl_ms minus the time since the request was received
//	  (go-zero gives no validity; as redisson-redlock does), fencing null, redis_key = the
//	  key and value = the token, so that the worker observes which node holds it.
//	  false -> refused (Acquire says only false: the key is held). An error -> error
//	  (a timeout or a broken connection: the SET may have happened), except go-zero's
//	  own circuit breaker refusing the call (breaker.ErrServiceUnavailable: nothing was
//	  sent) -> refused.
//	extend(lease, ttl_ms): go-zero's own refresh idiom, "recall Acquire if you own the
//	  lock" (its maintainers' answer): SetExpire(ttl_ms/1000) then Acquire() again on the
//	  SAME RedisLock that acquired the lease (a map token -> *RedisLock). true ->
//	  granted, validity_ms as for acquire; false -> refused; error -> error. A token this
//	  process does not hold (a predecessor's, or one it released) -> refused: a RedisLock
//	  carries its own random id and cannot be made for another's value.
//	  Known library bug passed through untouched: in v1.3.1 a second Acquire() on a held
//	  RedisLock only counts (reentrancy) and returns true without touching Redis, so an
//	  extend there claims success and the key keeps its old expiry (zeromicro/go-zero
//	  #1704, fixed in v1.3.2); its Release then only counts down and deletes nothing.
//	release(lease): Release() on that same RedisLock: true -> released true; false ->
//	  released false (the key was gone or held by another value); error -> error, but
//	  the breaker's refusal -> refused. A token released already asks the library again
//	  (its answer: false). A token this process never granted (a predecessor's) ->
//	  refused, for the reason above.
//
// options.timeout (a duration such as "50ms", default 50ms) is validated and ignored:
// go-zero's redis.New sets no timeouts in any of these versions (its Options are the
// password, TLS and later user/hooks; the go-redis client it makes is its own, with
// go-redis's default dial 5 s and read 3 s timeouts and MaxRetries 3). So a request to a
// node cut off can take longer than the worker's default request_timeout (5 s): that
// request is then `info` and the program is restarted. That is the library's behaviour.
//
// go-zero's logx writes info and stat lines to stdout in later versions (the reply
// channel): the program keeps the real stdout for its replies and points file
// descriptor 1 at stderr, so every line the library prints goes to the worker's log.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/zeromicro/go-zero/core/breaker"
	"github.com/zeromicro/go-zero/core/stores/redis"
)

const module = "github.com/zeromicro/go-zero"

type node struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Port int    `json:"port"`
}

type lease struct {
	Key   string `json:"key"`
	Token string `json:"token"`
}

type request struct {
	ID        *int64         `json:"id"`
	Op        string         `json:"op"`
	Protocol  int            `json:"protocol"`
	Protocols []int          `json:"protocols"`
	Nodes     []node         `json:"nodes"`
	Options   map[string]any `json:"options"`
	Key       string         `json:"key"`
	TTLMs     int64          `json:"ttl_ms"`
	Lease     *lease         `json:"lease"`
}

type reply map[string]any

// held is one lease this process granted: the RedisLock that acquired it, and its key.
type held struct {
	key  string
	lock *redis.RedisLock
}

type client struct {
	version  int          // the protocol version agreed at init
	store    *redis.Redis // nodes[0], the only node this lock uses
	held     map[string]held
	released map[string]held // tokens released already: a second Release asks the library
}

func main() {
	log.SetOutput(os.Stderr)
	log.SetPrefix("go-zero-client: ")
	out := bufio.NewWriter(replyChannel())
	in := bufio.NewReader(os.Stdin)
	c := &client{held: map[string]held{}, released: map[string]held{}}
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			r, exit := c.serve(line)
			if data, merr := json.Marshal(r); merr == nil {
				out.Write(append(data, '\n'))
				out.Flush()
			}
			if exit {
				os.Exit(exitCode(r))
			}
		}
		if err != nil { // io.EOF: stdin closed
			return
		}
	}
}

// replyChannel: the process's stdout, kept for the replies alone; file descriptor 1 then
// points at stderr, so that nothing the library prints can reach the reply channel.
func replyChannel() *os.File {
	fd, err := syscall.Dup(1)
	if err != nil {
		log.Fatalf("cannot keep stdout for the replies: %v", err)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Dup3(2, 1, 0); err != nil {
		log.Fatalf("cannot point stdout at stderr: %v", err)
	}
	return os.NewFile(uintptr(fd), "replies")
}

// exitCode: 0 after close, 1 after a refused init (an unknown protocol version).
func exitCode(r reply) int {
	if _, failed := r["error"]; failed {
		return 1
	}
	return 0
}

// serve answers one line; exit is true after close or a refused init.
func (c *client) serve(line []byte) (r reply, exit bool) {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return reply{"id": nil, "error": "malformed request: " + err.Error()}, false
	}
	if req.ID == nil {
		return reply{"id": nil, "error": "malformed request: no id"}, false
	}
	id := *req.ID
	fail := func(format string, args ...any) reply {
		return reply{"id": id, "error": fmt.Sprintf(format, args...)}
	}
	if req.Op != "init" && req.Op != "close" && c.store == nil {
		return fail("%q before init", req.Op), false
	}
	switch req.Op {
	case "init":
		version := negotiate(req)
		if version == 0 {
			return fail("unsupported protocols %v (this program speaks 1 and 2)", req.Protocols), true
		}
		if c.store != nil {
			return fail("init twice"), false
		}
		if len(req.Nodes) == 0 {
			return fail("init without nodes"), false
		}
		if err := checkTimeout(req.Options); err != nil {
			return fail("%v", err), false
		}
		first := req.Nodes[0]
		c.store = redis.New(fmt.Sprintf("%s:%d", first.Host, first.Port))
		c.version = version
		ready := reply{"id": id, "ok": true, "name": libraryName(), "abilities": []string{"extend"}}
		if version == 2 {
			ready["protocol"] = 2
		}
		return ready, false
	case "acquire":
		if req.Key == "" || req.TTLMs <= 0 {
			return fail("acquire needs key and a positive ttl_ms"), false
		}
		if req.TTLMs%1000 != 0 {
			return fail("ttl_ms %d is not whole seconds (go-zero's SetExpire takes seconds)", req.TTLMs), false
		}
		return c.acquire(id, req.Key, req.TTLMs), false
	case "release":
		if req.Lease == nil || req.Lease.Key == "" || req.Lease.Token == "" {
			return fail("release needs lease.key and lease.token"), false
		}
		return c.release(id, *req.Lease), false
	case "extend":
		if req.Lease == nil || req.Lease.Key == "" || req.Lease.Token == "" || req.TTLMs <= 0 {
			return fail("extend needs lease.key, lease.token and a positive ttl_ms"), false
		}
		if req.TTLMs%1000 != 0 {
			return fail("ttl_ms %d is not whole seconds (go-zero's SetExpire takes seconds)", req.TTLMs), false
		}
		return c.extend(id, *req.Lease, req.TTLMs), false
	case "close":
		return reply{"id": id, "ok": true}, true
	default:
		return fail("unknown op %q", req.Op), false
	}
}

// negotiate: 2 when the worker offers it (protocols), else 1 when init says protocol 1
// (a version-1 worker sends no protocols); 0: nothing this program speaks.
func negotiate(req request) int {
	for _, v := range req.Protocols {
		if v == 2 {
			return 2
		}
	}
	if req.Protocol == 1 {
		return 1
	}
	return 0
}

// refused: a certain failure, with its reason (version 1 has no reason).
func (c *client) refused(id int64, reason string) reply {
	if c.version >= 2 {
		return reply{"id": id, "refused": reason}
	}
	return reply{"id": id, "granted": false}
}

// checkTimeout: options.timeout, a duration as a scenario writes it ("50ms"). Checked,
// then unused: go-zero's redis.New takes no timeout (see the top of this file).
func checkTimeout(options map[string]any) error {
	raw, ok := options["timeout"]
	if !ok {
		return nil // the harness's default, 50ms
	}
	text, ok := raw.(string)
	timeout, err := time.ParseDuration(text)
	if !ok || err != nil || timeout <= 0 {
		return fmt.Errorf("options.timeout must be a positive duration such as \"50ms\", not %v", raw)
	}
	return nil
}

// validityMs: ttl_ms counted from when the request was received, less the time since:
// go-zero gives no validity, and its key expires later than that (its tolerance).
func validityMs(ttlMs int64, received time.Time) int64 {
	left := ttlMs - time.Since(received).Milliseconds()
	if left < 0 {
		return 0
	}
	return left
}

// breakerOpen: go-zero's circuit breaker refused the call, so no command was sent.
func breakerOpen(err error) bool {
	return errors.Is(err, breaker.ErrServiceUnavailable)
}

func (c *client) acquire(id int64, key string, ttlMs int64) reply {
	received := time.Now()
	lock := redis.NewRedisLock(c.store, key)
	lock.SetExpire(int(ttlMs / 1000))
	ok, err := lock.Acquire()
	if err != nil {
		if breakerOpen(err) {
			return c.refused(id, fmt.Sprintf("Acquire %s: %v", key, err))
		}
		return reply{"id": id, "error": fmt.Sprintf("Acquire %s: %v", key, err)}
	}
	if !ok {
		log.Printf("acquire %s refused: Acquire returned false", key)
		return c.refused(id, "RedisLock.Acquire returned false: the key is held")
	}
	// The library's random id, as it stored it (RedisLock has no accessor for it).
	token, err := c.store.Get(key)
	if err != nil {
		return reply{"id": id, "error": fmt.Sprintf("Acquire %s granted, but reading its value back failed: %v", key, err)}
	}
	if token == "" {
		return reply{"id": id, "error": fmt.Sprintf("Acquire %s granted, but the key was gone when its value was read back", key)}
	}
	c.held[token] = held{key, lock}
	return reply{
		"id": id, "granted": true, "token": token,
		"validity_ms": validityMs(ttlMs, received), "fencing": nil,
		"redis_key": key, "value": token,
	}
}

func (c *client) release(id int64, l lease) reply {
	h, ok := c.held[l.Token]
	if !ok {
		h, ok = c.released[l.Token]
	}
	if !ok || h.key != l.Key {
		return c.refused(id, "not granted by this program instance (a go-zero RedisLock "+
			"carries its own random id: it cannot act on another's lock)")
	}
	delete(c.held, l.Token)
	c.released[l.Token] = h
	ok, err := h.lock.Release()
	if err != nil {
		if breakerOpen(err) {
			return c.refused(id, fmt.Sprintf("Release %s: %v", l.Key, err))
		}
		return reply{"id": id, "error": fmt.Sprintf("Release %s: %v", l.Key, err)}
	}
	if !ok {
		log.Printf("release %s: Release returned false", l.Key)
	}
	return reply{"id": id, "released": ok}
}

func (c *client) extend(id int64, l lease, ttlMs int64) reply {
	received := time.Now()
	h, ok := c.held[l.Token]
	if !ok || h.key != l.Key {
		why := "not granted by this program instance (a go-zero RedisLock carries its own " +
			"random id: it cannot act on another's lock)"
		if _, gone := c.released[l.Token]; gone {
			why = "released already by this program instance"
		}
		return c.refused(id, why)
	}
	h.lock.SetExpire(int(ttlMs / 1000))
	ok, err := h.lock.Acquire()
	if err != nil {
		if breakerOpen(err) {
			return c.refused(id, fmt.Sprintf("re-Acquire %s: %v", l.Key, err))
		}
		return reply{"id": id, "error": fmt.Sprintf("re-Acquire %s: %v", l.Key, err)}
	}
	if !ok {
		log.Printf("extend %s refused: re-Acquire returned false", l.Key)
		return c.refused(id, "RedisLock.Acquire (again, to extend) returned false: the key is held by another")
	}
	return reply{"id": id, "granted": true, "validity_ms": validityMs(ttlMs, received)}
}

// libraryName reads go-zero's version from the build information, so it cannot go stale.
func libraryName() string {
	version := "(unknown version)"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == module {
				version = dep.Version
			}
		}
	}
	return "zeromicro/go-zero " + version
}
