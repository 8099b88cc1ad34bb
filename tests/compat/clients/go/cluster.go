// Cluster scenarios: `go-clients cluster HOST PORT SCENARIO` runs one against the cluster that
// HOST:PORT belongs to (the only address the client is given), `go-clients cluster list` prints
// their names. The last line printed is OK or FAIL: reason; the failover scenario prints `ready`
// once its writes flow, then waits for a `killed` line on stdin (the harness has killed the master
// of its counter), and prints a `result` line before the verdict.
//
// Where reads land is checked on the servers, not taken from the client: every node process counts
// the GETs it served (cmdstat_get in INFO commandstats), and one process serves each slot range at
// exactly one address, as master or as replica. So for the keys of one range, a GET counted by the
// process that masters the range was served by the master, and one counted by another process was
// served by a replica. Addresses are grouped into processes by INFO's run_id.

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	clusterScenarioTimeout = 100 * time.Second
	// How long replicas may take to apply a write, and topology changes to settle.
	settleTimeout = 10 * time.Second
)

var clusterScenarios = []scenario{
	{"goredis_cluster", goredisCluster},
	{"goredis_cluster_failover", goredisClusterFailover},
}

func clusterMain(args []string) {
	if len(args) == 1 && args[0] == "list" {
		for _, s := range clusterScenarios {
			fmt.Println(s.name)
		}
		return
	}
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go-clients cluster HOST PORT SCENARIO | go-clients cluster list")
		os.Exit(2)
	}
	verdict := "FAIL: unknown cluster scenario " + args[2] + " (see `cluster list`)"
	for i := range clusterScenarios {
		if clusterScenarios[i].name == args[2] {
			verdict = runWithTimeout(&clusterScenarios[i], args[0]+":"+args[1], clusterScenarioTimeout)
		}
	}
	fmt.Println(verdict)
	if verdict != "OK" {
		os.Exit(1)
	}
}

// --- the cluster as the servers describe it ------------------------------------------------------

// slotRange is one slot range of CLUSTER SLOTS with its master's and replicas' addresses.
type slotRange struct {
	lo, hi   int
	master   string
	replicas []string
}

func (r slotRange) has(slot int) bool { return r.lo <= slot && slot <= r.hi }

func (r slotRange) addrs() []string { return append([]string{r.master}, r.replicas...) }

func plain(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second})
}

func slotsOf(ctx context.Context, addr string) ([]slotRange, error) {
	c := plain(addr)
	defer c.Close()
	s, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, err
	}
	var out []slotRange
	for _, x := range s {
		r := slotRange{lo: x.Start, hi: x.End}
		for i, n := range x.Nodes {
			if i == 0 {
				r.master = n.Addr
			} else {
				r.replicas = append(r.replicas, n.Addr)
			}
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].lo < out[j].lo })
	return out, nil
}

// stableSlots returns the slot ranges once every slot is served, with replicas, and two reads
// 200 ms apart agree.
func stableSlots(ctx context.Context, seed string) []slotRange {
	deadline := time.Now().Add(settleTimeout)
	for {
		a, err1 := slotsOf(ctx, seed)
		time.Sleep(200 * time.Millisecond)
		b, err2 := slotsOf(ctx, seed)
		if err1 == nil && err2 == nil && reflect.DeepEqual(a, b) && covers(b) {
			return b
		}
		check(time.Now().Before(deadline), "no complete, settled CLUSTER SLOTS within %s: %v %v %v", settleTimeout, b, err1, err2)
	}
}

func covers(ranges []slotRange) bool {
	next := 0
	for _, r := range ranges {
		if r.lo != next || len(r.replicas) == 0 {
			return false
		}
		next = r.hi + 1
	}
	return next == 16384
}

// keySlot is the key's hash slot: CRC16 (XMODEM) of the key or of its {hash tag}, mod 16384.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// keysAcross returns perRange keys named prefix+n in each range, in range order.
func keysAcross(ranges []slotRange, prefix string, perRange int) []string {
	var keys []string
	for _, r := range ranges {
		for n, found := 0, 0; found < perRange; n++ {
			if k := prefix + strconv.Itoa(n); r.has(keySlot(k)) {
				keys = append(keys, k)
				found++
			}
		}
	}
	return keys
}

func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// processes maps every address of the ranges to its node process's run_id.
func processes(ctx context.Context, ranges []slotRange) map[string]string {
	out := map[string]string{}
	for _, r := range ranges {
		for _, a := range r.addrs() {
			c := plain(a)
			info, err := c.Info(ctx, "server").Result()
			c.Close()
			noErr(err, "INFO server of "+a)
			out[a] = infoField(info, "run_id")
		}
	}
	return out
}

// getCalls returns the GET calls each process has served so far, by run_id.
func getCalls(ctx context.Context, procs map[string]string) map[string]int64 {
	out := map[string]int64{}
	for a, run := range procs {
		if _, done := out[run]; done {
			continue
		}
		c := plain(a)
		info, err := c.Info(ctx, "commandstats").Result()
		c.Close()
		noErr(err, "INFO commandstats of "+a)
		out[run] = 0
		for _, kv := range strings.Split(infoField(info, "cmdstat_get"), ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				out[run], _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return out
}

// getRecorder is a hook on every node client of a ClusterClient: the GETs each address answered.
type getRecorder struct {
	mu     sync.Mutex
	counts map[string]int64
}

func (g *getRecorder) attach(c *redis.Client) {
	addr := c.Options().Addr
	c.AddHook(getHook{g, addr})
}

func (g *getRecorder) snapshot() map[string]int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int64, len(g.counts))
	for k, v := range g.counts {
		out[k] = v
	}
	return out
}

type getHook struct {
	g    *getRecorder
	addr string
}

func (h getHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h getHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h getHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "get" && (err == nil || err == redis.Nil) {
			h.g.mu.Lock()
			h.g.counts[h.addr]++
			h.g.mu.Unlock()
		}
		return err
	}
}

// --- scenarios --------------------------------------------------------------------------------

func goredisCluster(ctx context.Context, seed string) (err error) {
	defer catch(&err)
	ranges := stableSlots(ctx, seed)
	rec := &getRecorder{counts: map[string]int64{}}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:          []string{seed},
		ReadOnly:       true,
		RouteByLatency: true,
		DialTimeout:    5 * time.Second,
		ReadTimeout:    5 * time.Second,
		WriteTimeout:   5 * time.Second,
	})
	defer rdb.Close()
	rdb.OnNewNode(rec.attach)

	// The seed alone is enough to learn every address of every slot range.
	var mu sync.Mutex
	known := map[string]bool{}
	learn := func(ctx context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		known[c.Options().Addr] = true
		return nil
	}
	noErr(rdb.ForEachMaster(ctx, learn), "ForEachMaster")
	noErr(rdb.ForEachSlave(ctx, learn), "ForEachSlave")
	for _, r := range ranges {
		for _, a := range r.addrs() {
			check(known[a], "ClusterClient does not know %s (it knows %v)", a, known)
		}
	}

	// Many keys over every slot range: SET from 8 goroutines, then GET (routed by latency, to a
	// master or a replica; replicas apply a write a moment after the master acknowledged it).
	kv := map[string]string{}
	var keys []string
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("goredis:k:%d", i)
		kv[k] = fmt.Sprintf("goredis-v%d", i)
		keys = append(keys, k)
	}
	work := make(chan string)
	errs := make(chan error, len(keys))
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range work {
				if err := rdb.Set(ctx, k, kv[k], 0).Err(); err != nil {
					errs <- fmt.Errorf("SET %s: %w", k, err)
				}
			}
		}()
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	close(errs)
	for e := range errs {
		noErr(e, "SET")
	}
	waitUntil("GETs to return the values written", func() bool {
		for _, k := range keys {
			if v, err := rdb.Get(ctx, k).Result(); err != nil || v != kv[k] {
				return false
			}
		}
		return true
	})

	// Keys of one hash tag go together.
	noErr(rdb.MSet(ctx, "{user:1}:a", "goredis-a", "{user:1}:b", "goredis-b").Err(), "MSET {user:1}:a {user:1}:b")
	waitUntil("MGET {user:1}:a {user:1}:b", func() bool {
		v, err := rdb.MGet(ctx, "{user:1}:a", "{user:1}:b").Result()
		return err == nil && reflect.DeepEqual(v, []interface{}{"goredis-a", "goredis-b"})
	})

	// A pipeline of INCRs over every slot range: exact replies, in order.
	counters := keysAcross(ranges, "goredis:pipe:", 2)
	for _, k := range counters {
		noErr(rdb.Del(ctx, k).Err(), "DEL "+k)
	}
	cmds, e := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < 4*len(counters); i++ {
			p.Incr(ctx, counters[i%len(counters)])
		}
		return nil
	})
	noErr(e, "Pipelined INCRs")
	for i, c := range cmds {
		eq(int64(i/len(counters)+1), c.(*redis.IntCmd).Val(), fmt.Sprintf("pipelined INCR #%d (%s)", i, counters[i%len(counters)]))
	}

	checkRoutedReads(ctx, seed, rdb, rec, kv)
	return nil
}

// checkRoutedReads reads every key of kv, one slot range at a time, and checks on the servers that
// each process served exactly the GETs the client sent to its addresses. RouteByLatency sends a
// range's reads to its fastest address, master or replica, as measured by pings every 10 s or
// more: until some reads have gone to a replica (and been served there), the rounds go on, with a
// reload of the cluster state each second, which measures latencies again once 10 s old.
func checkRoutedReads(ctx context.Context, seed string, rdb *redis.ClusterClient, rec *getRecorder, kv map[string]string) {
	deadline := time.Now().Add(30 * time.Second)
	for round := 1; ; round++ {
		var onReplicas, onMasters int64
		for _, r := range stableSlots(ctx, seed) {
			var keys []string
			for k := range kv {
				if r.has(keySlot(k)) {
					keys = append(keys, k)
				}
			}
			check(len(keys) > 0, "no key in slots %d-%d", r.lo, r.hi)
			for attempt := 1; ; attempt++ {
				before, err := slotsOf(ctx, seed)
				noErr(err, "CLUSTER SLOTS")
				procs := processes(ctx, before)
				c0, sent0 := getCalls(ctx, procs), rec.snapshot()
				for _, k := range keys {
					v, err := rdb.Get(ctx, k).Result()
					noErr(err, "GET "+k)
					eq(kv[k], v, "GET "+k)
				}
				c1, sent1 := getCalls(ctx, procs), rec.snapshot()
				if after, err := slotsOf(ctx, seed); err != nil || !reflect.DeepEqual(after, before) {
					check(attempt < 3, "the slot ranges kept changing")
					continue
				}
				var m slotRange
				for _, x := range before {
					if x.lo == r.lo {
						m = x
					}
				}
				sent := map[string]int64{}
				for a, n := range sent1 {
					sent[procs[a]] += n - sent0[a]
				}
				var total int64
				for run := range c1 {
					served := c1[run] - c0[run]
					check(served == sent[run], "slots %d-%d (master %s, replicas %v): the process at %v served %d GETs, the client sent it %d",
						m.lo, m.hi, m.master, m.replicas, addrsOf(procs, run), served, sent[run])
					total += served
					if run == procs[m.master] {
						onMasters += served
					} else {
						onReplicas += served
					}
				}
				var sentTotal int64
				for _, n := range sent {
					sentTotal += n
				}
				eq(int64(len(keys)), sentTotal, fmt.Sprintf("GETs the client sent for slots %d-%d", m.lo, m.hi))
				eq(int64(len(keys)), total, fmt.Sprintf("GETs served for slots %d-%d", m.lo, m.hi))
				break
			}
		}
		if onReplicas > 0 {
			fmt.Printf("reads round %d: %d served by replicas, %d by masters\n", round, onReplicas, onMasters)
			return
		}
		check(time.Now().Before(deadline), "RouteByLatency sent every read to the masters for 30 s (%d rounds)", round)
		time.Sleep(time.Second)
		rdb.ReloadState(ctx)
	}
}

func addrsOf(procs map[string]string, run string) []string {
	var out []string
	for a, r := range procs {
		if r == run {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

func waitUntil(what string, cond func() bool) {
	deadline := time.Now().Add(settleTimeout)
	for !cond() {
		check(time.Now().Before(deadline), "waited %s for %s", settleTimeout, what)
		time.Sleep(20 * time.Millisecond)
	}
}

// --- a master killed while the client INCRs one counter -----------------------------------------

// refused tells a write that was certainly not applied: the server answered with an error that says
// so (MOVED, TRYAGAIN...), or the client could not connect to send it.
func refused(err error) bool {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return !strings.Contains(err.Error(), "may still be applied")
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

const (
	writesBefore = 100 // acknowledged before `ready`
	writesAfter  = 100 // acknowledged after `killed`, then the scenario ends
	recovery     = 40 * time.Second
)

// goredisClusterFailover INCRs a counter that starts at 0 until the harness has killed its master
// and writesAfter more writes are acknowledged. Every reply must be higher than the one before it
// (a lost write would make the counter go back); the final value, read from the master, must count
// every acknowledged write and at most the failed ones whose outcome is unknown (all but those
// refused tells).
func goredisClusterFailover(ctx context.Context, seed string) (err error) {
	defer catch(&err)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:          []string{seed},
		ReadOnly:       true,
		RouteByLatency: true,
		// One attempt per command: after a network error go-redis sends the command again, and an
		// INCR applied before the error would count twice, unseen.
		MaxRedirects: -1,
		// The client learns of a dead master only by reloading the cluster state: each second.
		ClusterStateReloadInterval: time.Second,
		DialTimeout:                5 * time.Second,
		ReadTimeout:                5 * time.Second,
		WriteTimeout:               5 * time.Second,
	})
	defer rdb.Close()
	const key = "goredis:failover"
	waitUntil("DEL "+key, func() bool { return rdb.Del(ctx, key).Err() == nil })

	var killedAt atomic.Int64
	go func() {
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			if strings.TrimSpace(in.Text()) == "killed" {
				killedAt.Store(time.Now().UnixNano())
			}
		}
	}()

	var acked, ambiguous, refusals, last, ackedAfter int64
	var readyAt time.Time
	errs := map[string]int{}
	for {
		killed := killedAt.Load()
		v, err := rdb.Incr(ctx, key).Result()
		if err == nil {
			check(v > last, "INCR %s answered %d after an acknowledged %d: an acknowledged write was lost", key, v, last)
			last = v
			acked++
			if killed != 0 {
				ackedAfter++
			}
		} else {
			if refused(err) {
				refusals++
			} else {
				ambiguous++
			}
			errs[err.Error()]++
			time.Sleep(20 * time.Millisecond)
		}
		if readyAt.IsZero() && acked >= writesBefore {
			readyAt = time.Now()
			fmt.Println("ready")
		}
		if killed != 0 && ackedAfter >= writesAfter {
			break
		}
		check(readyAt.IsZero() || killed != 0 || time.Since(readyAt) < 30*time.Second, "no `killed` line on stdin within 30 s of `ready`")
		check(killed == 0 || time.Since(time.Unix(0, killed)) < recovery,
			"only %d writes acknowledged in the %s after the kill; errors: %v", ackedAfter, recovery, errs)
	}
	var final int64 = -1
	waitUntil("a final GET "+key+" from its master", func() bool {
		m, err := rdb.MasterForKey(ctx, key)
		if err != nil {
			return false
		}
		final, err = m.Get(ctx, key).Int64()
		return err == nil
	})
	fmt.Printf("result acked=%d ambiguous=%d refused=%d last=%d final=%d\n", acked, ambiguous, refusals, last, final)
	fmt.Printf("errors %v\n", errs)
	check(final >= last && final >= acked, "final value %d of %s lost acknowledged writes (%d acknowledged, the last reply %d)", final, key, acked, last)
	check(final <= acked+ambiguous, "final value %d of %s is more than the %d acknowledged writes and %d ambiguous failures: a write applied twice", final, key, acked, ambiguous)
	return nil
}
