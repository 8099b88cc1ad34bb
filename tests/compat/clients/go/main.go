// Command go-clients runs go-redis v9 checks against a server for the compat suite
// (tests/compat/test_clients.py builds and runs it).
//
//	go-clients HOST PORT SCENARIO...   run scenarios; one line each: OK or FAIL: reason
//	                                   (prefixed with "SCENARIO: " when several are given);
//	                                   exit status 1 if any failed
//	go-clients list                    the scenario names, one a line
//
// "all" as the only scenario runs every one. Each scenario expects an empty server (the suite
// gives each a fresh one); when several are given the server is FLUSHALLed before each, so point
// it at a throwaway server only. A scenario still running after 10 s fails and the process exits.
//
//	go-clients cluster ...             the cluster scenarios instead (see cluster.go)
package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	scenarioTimeout = 10 * time.Second
	eventTimeout    = 5 * time.Second
)

type scenario struct {
	name string
	run  func(ctx context.Context, addr string) error
}

var scenarios []scenario

func init() {
	for _, proto := range []int{2, 3} {
		proto := proto
		sfx := fmt.Sprintf("_resp%d", proto)
		add := func(name string, f func(ctx context.Context, addr string, proto int) error) {
			scenarios = append(scenarios, scenario{name + sfx, func(ctx context.Context, addr string) error {
				return f(ctx, addr, proto)
			}})
		}
		add("goredis_txpipelined", txPipelined)
		add("goredis_watch", watch)
		add("goredis_scripting", scripting)
		add("goredis_pubsub", pubsub)
	}
}

func main() {
	args := os.Args[1:]
	if len(args) >= 1 && args[0] == "cluster" {
		clusterMain(args[1:])
		return
	}
	if len(args) == 1 && args[0] == "list" {
		for _, s := range scenarios {
			fmt.Println(s.name)
		}
		return
	}
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: go-clients HOST PORT SCENARIO... | go-clients list | go-clients cluster ...")
		os.Exit(2)
	}
	addr := args[0] + ":" + args[1]
	names := args[2:]
	if len(names) == 1 && names[0] == "all" {
		names = nil
		for _, s := range scenarios {
			names = append(names, s.name)
		}
	}
	several := len(names) > 1
	ok := true
	for _, name := range names {
		if several {
			flushAll(addr)
		}
		verdict := runOne(name, addr)
		if several {
			fmt.Printf("%s: %s\n", name, verdict)
		} else {
			fmt.Println(verdict)
		}
		ok = ok && verdict == "OK"
	}
	if !ok {
		os.Exit(1)
	}
}

func flushAll(addr string) {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.FlushAll(ctx)
	c.ScriptFlush(ctx)
}

func runOne(name, addr string) string {
	var s *scenario
	for i := range scenarios {
		if scenarios[i].name == name {
			s = &scenarios[i]
		}
	}
	if s == nil {
		return "FAIL: unknown scenario " + name + " (see `list`)"
	}
	return runWithTimeout(s, addr, scenarioTimeout)
}

// runWithTimeout runs s and returns its verdict; after timeout it prints a FAIL line and exits.
func runWithTimeout(s *scenario, addr string, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("panic: %v", p)
			}
		}()
		done <- s.run(ctx, addr)
	}()
	select {
	case err := <-done:
		if err != nil {
			return "FAIL: " + strings.ReplaceAll(err.Error(), "\n", " ")
		}
		return "OK"
	case <-time.After(timeout + time.Second):
		fmt.Printf("FAIL: timed out after %s\n", timeout)
		os.Exit(1)
		return ""
	}
}

// --- helpers -------------------------------------------------------------------------------

type checkFailed struct{ msg string }

func (e checkFailed) Error() string { return e.msg }

// fail aborts the scenario with a checkFailed panic (turned into its error by catch), naming the
// scenario line that failed.
func fail(format string, args ...interface{}) {
	where := ""
	pcs := make([]uintptr, 16)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		switch f.Function {
		case "main.fail", "main.check", "main.eq", "main.noErr":
		default:
			file := f.File
			if i := strings.LastIndexByte(file, '/'); i >= 0 {
				file = file[i+1:]
			}
			where = fmt.Sprintf(" [%s:%d]", file, f.Line)
			more = false
		}
		if !more {
			break
		}
	}
	panic(checkFailed{fmt.Sprintf(format, args...) + where})
}

func check(ok bool, format string, args ...interface{}) {
	if !ok {
		fail(format, args...)
	}
}

func eq(want, got interface{}, what string) {
	if !reflect.DeepEqual(want, got) {
		fail("%s: expected %#v, got %#v", what, want, got)
	}
}

func noErr(err error, what string) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

// catch turns a checkFailed panic into the scenario's error.
func catch(err *error) {
	if p := recover(); p != nil {
		if cf, ok := p.(checkFailed); ok {
			*err = cf
			return
		}
		panic(p)
	}
}

func newClient(addr string, proto int) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:         addr,
		Protocol:     proto,
		DialTimeout:  5 * time.Second,
		ReadTimeout:  5 * time.Second,
		WriteTimeout: 5 * time.Second,
		MaxRetries:   -1, // no silent retries: a failure is reported as it happened
		PoolSize:     20,
	})
}

func sha1Hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// --- scenarios -----------------------------------------------------------------------------

func txPipelined(ctx context.Context, addr string, proto int) (err error) {
	defer catch(&err)
	rdb := newClient(addr, proto)
	defer rdb.Close()
	noErr(rdb.Ping(ctx).Err(), "PING")

	var set *redis.StatusCmd
	var incr, incrBy *redis.IntCmd
	var get *redis.StringCmd
	var exists *redis.IntCmd
	cmds, e := rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		set = pipe.Set(ctx, "gt:a", "1", 0)
		incr = pipe.Incr(ctx, "gt:a")
		incrBy = pipe.IncrBy(ctx, "gt:a", 10)
		get = pipe.Get(ctx, "gt:a")
		exists = pipe.Exists(ctx, "gt:missing")
		return nil
	})
	noErr(e, "TxPipelined")
	eq(5, len(cmds), "number of commands returned by TxPipelined")
	eq("OK", set.Val(), "SET in MULTI/EXEC")
	eq(int64(2), incr.Val(), "INCR in MULTI/EXEC")
	eq(int64(12), incrBy.Val(), "INCRBY in MULTI/EXEC")
	eq("12", get.Val(), "GET in MULTI/EXEC")
	eq(int64(0), exists.Val(), "EXISTS in MULTI/EXEC")
	v, e := rdb.Get(ctx, "gt:a").Result()
	noErr(e, "GET after EXEC")
	eq("12", v, "GET after EXEC")

	// A command failing at EXEC time: TxPipelined reports the first error, the others ran.
	var bad *redis.IntCmd
	var after *redis.StringCmd
	_, e = rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, "gt:s", "abc", 0)
		bad = pipe.Incr(ctx, "gt:s")
		after = pipe.Get(ctx, "gt:s")
		return nil
	})
	check(e != nil && strings.Contains(e.Error(), "not an integer"), "TxPipelined with a failing INCR: error %v", e)
	check(bad.Err() != nil && strings.Contains(bad.Err().Error(), "not an integer"), "failing INCR's error: %v", bad.Err())
	eq("abc", after.Val(), "GET after the failing command in the transaction")

	// A queued command the server rejects (wrong arity): EXECABORT, nothing runs.
	_, e = rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, "gt:abort", "1", 0)
		pipe.Do(ctx, "SET", "gt:only-one-argument")
		return nil
	})
	check(e != nil && strings.HasPrefix(e.Error(), "EXECABORT"), "TxPipelined with a wrong-arity command: expected EXECABORT, got %v", e)
	n, e := rdb.Exists(ctx, "gt:abort").Result()
	noErr(e, "EXISTS")
	eq(int64(0), n, "key set by the aborted transaction")

	// A plain pipeline on the same client.
	cmds, e = rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i := 0; i < 100; i++ {
			pipe.Set(ctx, fmt.Sprintf("gt:p%d", i), i, 0)
		}
		pipe.DBSize(ctx)
		return nil
	})
	noErr(e, "Pipelined")
	eq(int64(102), cmds[100].(*redis.IntCmd).Val(), "DBSIZE at the end of a plain pipeline")
	return nil
}

// watch: optimistic locking. A deterministic conflict first (the watched key is changed from
// another connection inside the transaction function), then 10 goroutines incrementing one
// counter with WATCH/GET/MULTI/SET/EXEC, retrying on TxFailedErr.
func watch(ctx context.Context, addr string, proto int) (err error) {
	defer catch(&err)
	rdb := newClient(addr, proto)
	defer rdb.Close()
	noErr(rdb.Set(ctx, "gw:k", "0", 0).Err(), "SET")

	e := rdb.Watch(ctx, func(tx *redis.Tx) error {
		v, err := tx.Get(ctx, "gw:k").Result()
		if err != nil {
			return err
		}
		if err := rdb.Set(ctx, "gw:k", "theirs", 0).Err(); err != nil { // another pooled connection
			return err
		}
		_, err = tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.Set(ctx, "gw:k", v+"-mine", 0)
			return nil
		})
		return err
	}, "gw:k")
	check(errors.Is(e, redis.TxFailedErr), "Watch after the key changed: expected TxFailedErr, got %v", e)
	v, e := rdb.Get(ctx, "gw:k").Result()
	noErr(e, "GET")
	eq("theirs", v, "watched key after the failed transaction")

	const key = "gw:counter"
	const workers, perWorker, maxRetries = 10, 10, 1000
	var successes, conflicts atomic.Int64
	increment := func() error {
		for i := 0; i < maxRetries; i++ {
			err := rdb.Watch(ctx, func(tx *redis.Tx) error {
				n, err := tx.Get(ctx, key).Int()
				if err != nil && err != redis.Nil {
					return err
				}
				_, err = tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
					pipe.Set(ctx, key, n+1, 0)
					return nil
				})
				return err
			}, key)
			if err == nil {
				successes.Add(1)
				return nil
			}
			if errors.Is(err, redis.TxFailedErr) {
				conflicts.Add(1)
				continue
			}
			return err
		}
		return fmt.Errorf("increment still conflicting after %d retries", maxRetries)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				if err := increment(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		noErr(e, "increment")
	}
	n, e := rdb.Get(ctx, key).Int64()
	noErr(e, "GET counter")
	eq(successes.Load(), n, fmt.Sprintf("counter vs successful increments (%d conflicts retried)", conflicts.Load()))
	eq(int64(workers*perWorker), n, "counter after every increment succeeded")
	return nil
}

const script2 = "redis.call('SET', KEYS[1], ARGV[1]) " +
	"redis.call('SET', KEYS[2], ARGV[2]) " +
	"return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2]), #KEYS, #ARGV}"

func scripting(ctx context.Context, addr string, proto int) (err error) {
	defer catch(&err)
	rdb := newClient(addr, proto)
	defer rdb.Close()

	r, e := rdb.Eval(ctx, script2, []string{"gs:a", "gs:b"}, "x", "y").Result()
	noErr(e, "EVAL")
	eq([]interface{}{"x", "y", int64(2), int64(2)}, r, "EVAL of a 2-key script")

	sha, e := rdb.ScriptLoad(ctx, script2).Result()
	noErr(e, "SCRIPT LOAD")
	eq(sha1Hex(script2), sha, "SCRIPT LOAD returns the SHA1")
	ex, e := rdb.ScriptExists(ctx, sha, sha1Hex("return 0")).Result()
	noErr(e, "SCRIPT EXISTS")
	eq([]bool{true, false}, ex, "SCRIPT EXISTS")
	r, e = rdb.EvalSha(ctx, sha, []string{"gs:c", "gs:d"}, 1, 2).Result()
	noErr(e, "EVALSHA")
	eq([]interface{}{"1", "2", int64(2), int64(2)}, r, "EVALSHA")

	_, e = rdb.EvalSha(ctx, sha1Hex("return 'never loaded'"), nil).Result()
	check(e != nil && strings.HasPrefix(e.Error(), "NOSCRIPT"), "EVALSHA of an unknown script: %v", e)
	_, e = rdb.Eval(ctx, "return redis.error_reply('MYERR boom')", nil).Result()
	check(e != nil && e.Error() == "MYERR boom", "EVAL error_reply: %v", e)
	_, e = rdb.Eval(ctx, "return nil", nil).Result()
	check(e == redis.Nil, "EVAL returning nil: expected redis.Nil, got %v", e)
	r, e = rdb.Eval(ctx, "return {1, 'two', {3, 'four'}}", nil).Result()
	noErr(e, "EVAL nested")
	eq([]interface{}{int64(1), "two", []interface{}{int64(3), "four"}}, r, "EVAL nested array")

	// Script.Run tries EVALSHA and falls back to EVAL on NOSCRIPT; EVAL caches the script, so
	// the next Run's EVALSHA hits.
	noErr(rdb.ScriptFlush(ctx).Err(), "SCRIPT FLUSH")
	s := redis.NewScript("return redis.call('INCRBY', KEYS[1], ARGV[1])")
	ex, e = rdb.ScriptExists(ctx, s.Hash()).Result()
	noErr(e, "SCRIPT EXISTS")
	eq([]bool{false}, ex, "SCRIPT EXISTS after SCRIPT FLUSH")
	n, e := s.Run(ctx, rdb, []string{"gs:n"}, 5).Int64()
	noErr(e, "Script.Run (EVALSHA -> NOSCRIPT -> EVAL)")
	eq(int64(5), n, "Script.Run result")
	ex, e = rdb.ScriptExists(ctx, s.Hash()).Result()
	noErr(e, "SCRIPT EXISTS")
	eq([]bool{true}, ex, "SCRIPT EXISTS after EVAL cached the script")
	n, e = s.Run(ctx, rdb, []string{"gs:n"}, 5).Int64()
	noErr(e, "Script.Run (EVALSHA)")
	eq(int64(10), n, "second Script.Run result")
	n, e = s.EvalSha(ctx, rdb, []string{"gs:n"}, 1).Int64()
	noErr(e, "Script.EvalSha")
	eq(int64(11), n, "Script.EvalSha result")
	return nil
}

func pubsub(ctx context.Context, addr string, proto int) (err error) {
	defer catch(&err)
	rdb := newClient(addr, proto)
	defer rdb.Close()

	receive := func(ps *redis.PubSub, what string) interface{} {
		m, err := ps.ReceiveTimeout(ctx, eventTimeout)
		noErr(err, what)
		return m
	}
	expectSub := func(ps *redis.PubSub, kind, channel string, count int) {
		m := receive(ps, kind+" "+channel)
		s, ok := m.(*redis.Subscription)
		check(ok, "expected a %s confirmation for %s, got %#v", kind, channel, m)
		eq(redis.Subscription{Kind: kind, Channel: channel, Count: count}, *s, "subscription confirmation")
	}
	next := func(ch <-chan *redis.Message, what string) *redis.Message {
		select {
		case m, ok := <-ch:
			check(ok, "%s: message channel closed", what)
			return m
		case <-time.After(eventTimeout):
			fail("%s: no message within %s", what, eventTimeout)
			return nil
		}
	}
	publish := func(channel, msg string, want int64) {
		n, err := rdb.Publish(ctx, channel, msg).Result()
		noErr(err, "PUBLISH "+channel)
		eq(want, n, "PUBLISH "+channel+" receivers")
	}

	sub := rdb.Subscribe(ctx, "gp:ch1", "gp:ch2")
	defer sub.Close()
	expectSub(sub, "subscribe", "gp:ch1", 1)
	expectSub(sub, "subscribe", "gp:ch2", 2)
	msgs := sub.Channel()

	for i := 0; i < 20; i++ {
		ch := []string{"gp:ch1", "gp:ch2"}[i%2]
		publish(ch, fmt.Sprintf("m%d", i), 1)
	}
	for i := 0; i < 20; i++ {
		m := next(msgs, fmt.Sprintf("message m%d", i))
		eq(redis.Message{Channel: []string{"gp:ch1", "gp:ch2"}[i%2], Payload: fmt.Sprintf("m%d", i)}, *m, "message")
	}
	publish("gp:nobody", "x", 0)

	psub := rdb.PSubscribe(ctx, "gp:ch*")
	defer psub.Close()
	expectSub(psub, "psubscribe", "gp:ch*", 1)
	pmsgs := psub.Channel()
	// A channel subscriber and a pattern subscriber on two connections: 2 receivers.
	publish("gp:ch1", "both", 2)
	eq(redis.Message{Channel: "gp:ch1", Payload: "both"}, *next(msgs, "message both"), "message to the channel subscriber")
	eq(redis.Message{Channel: "gp:ch1", Pattern: "gp:ch*", Payload: "both"}, *next(pmsgs, "pmessage both"), "message to the pattern subscriber")
	publish("gp:chX", "pattern-only", 1)
	eq(redis.Message{Channel: "gp:chX", Pattern: "gp:ch*", Payload: "pattern-only"}, *next(pmsgs, "pmessage pattern-only"), "pattern-only message")

	// Unsubscribe, waiting for the confirmation before publishing again.
	un := rdb.Subscribe(ctx, "gp:u")
	defer un.Close()
	expectSub(un, "subscribe", "gp:u", 1)
	publish("gp:u", "hi", 1)
	m := receive(un, "message on gp:u")
	eq(&redis.Message{Channel: "gp:u", Payload: "hi"}, m, "message on gp:u")
	noErr(un.Unsubscribe(ctx, "gp:u"), "UNSUBSCRIBE")
	expectSub(un, "unsubscribe", "gp:u", 0)
	publish("gp:u", "nobody", 0)
	noErr(un.Subscribe(ctx, "gp:u2"), "SUBSCRIBE again")
	expectSub(un, "subscribe", "gp:u2", 1)
	publish("gp:u2", "again", 1)
	m = receive(un, "message on gp:u2")
	eq(&redis.Message{Channel: "gp:u2", Payload: "again"}, m, "message after re-subscribing")

	// Closing the subscriptions drops their receivers.
	noErr(psub.Close(), "close pattern subscription")
	noErr(sub.Close(), "close channel subscription")
	noErr(un.Close(), "close third subscription")
	deadline := time.Now().Add(eventTimeout)
	for {
		n, err := rdb.Publish(ctx, "gp:ch1", "after-close").Result()
		noErr(err, "PUBLISH after closing")
		if n == 0 {
			break
		}
		check(time.Now().Before(deadline), "PUBLISH still reaches %d receivers %s after closing every subscription", n, eventTimeout)
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}
