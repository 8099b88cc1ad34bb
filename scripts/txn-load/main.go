// txn-load: redis-benchmark's closed loop for a transaction, which redis-benchmark cannot send:
// each of -c clients sends MULTI, SET key value, SET key value, EXEC (random keys of -r, values
// of -d bytes) and waits for the four replies before the next; -n transactions in all. It
// prints redis-benchmark's --csv lines (rates are transactions per second, latencies are a
// whole transaction's, in ms), so scripts/bench-redis.sh reads it as it reads redis-benchmark.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	host := flag.String("h", "127.0.0.1", "server host")
	port := flag.Int("p", 6379, "server port")
	total := flag.Int64("n", 100000, "transactions in all")
	clients := flag.Int("c", 50, "connections, each one transaction at a time")
	size := flag.Int("d", 100, "value size, bytes")
	keyspace := flag.Int("r", 1000000, "random keys key:%012d below this")
	flag.Parse()

	value := make([]byte, *size)
	for i := range value {
		value[i] = 'x'
	}
	var next int64
	lat := make([][]time.Duration, *clients)
	errs := make(chan error, *clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			conn, err := net.Dial("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			r := bufio.NewReader(conn)
			rng := rand.New(rand.NewSource(int64(c) + 1))
			buf := make([]byte, 0, 512)
			for atomic.AddInt64(&next, 1) <= *total {
				buf = buf[:0]
				buf = append(buf, "*1\r\n$5\r\nMULTI\r\n"...)
				for k := 0; k < 2; k++ {
					key := fmt.Sprintf("key:%012d", rng.Intn(*keyspace))
					buf = append(buf, fmt.Sprintf("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n", len(key), key, len(value))...)
					buf = append(buf, value...)
					buf = append(buf, "\r\n"...)
				}
				buf = append(buf, "*1\r\n$4\r\nEXEC\r\n"...)
				t0 := time.Now()
				if _, err := conn.Write(buf); err != nil {
					errs <- err
					return
				}
				if err := expect(r); err != nil {
					errs <- err
					return
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		}(c)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		fmt.Fprintln(os.Stderr, "Error from server:", err)
		os.Exit(1)
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		fmt.Fprintln(os.Stderr, "no transaction completed")
		os.Exit(1)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/1e6) }
	pct := func(p float64) time.Duration { return all[int(float64(len(all)-1)*p)] }
	fmt.Println(`"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"`)
	fmt.Printf("\"MULTI\",\"%.2f\",\"%s\",\"%s\",\"%s\",\"%s\",\"%s\",\"%s\"\n",
		float64(len(all))/elapsed.Seconds(), ms(sum/time.Duration(len(all))), ms(all[0]),
		ms(pct(0.5)), ms(pct(0.95)), ms(pct(0.99)), ms(all[len(all)-1]))
}

// expect reads the four replies of one transaction: +OK, +QUEUED, +QUEUED, then EXEC's array
// of two +OK. Anything else is an error.
func expect(r *bufio.Reader) error {
	for _, want := range []string{"+OK", "+QUEUED", "+QUEUED", "*2", "+OK", "+OK"} {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if len(line) < 2 || line[:len(line)-2] != want {
			return fmt.Errorf("expected %s, got %q", want, line)
		}
	}
	return nil
}
